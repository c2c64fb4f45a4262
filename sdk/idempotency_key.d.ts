/**
 * Idempotency keys for `createSession`.
 *
 * @module
 */

/**
 * A fresh Idempotency-Key: a random UUID v4 (122 random bits). Uses `crypto.getRandomValues`, so it also
 * works on pages that are not a secure context (where `crypto.randomUUID` is missing).
 *
 * @example Keep the key to repeat a create by hand
 * ```ts
 * import { newIdempotencyKey } from "@avatar-svc/sdk";
 * const key = newIdempotencyKey(); // e.g. "3b241101-e2bb-4255-8caf-4136c566a962"
 * ```
 */
export declare function newIdempotencyKey(): string;

/** True when `key` is a valid Idempotency-Key: 1..255 printable ASCII characters (`!` to `~`). */
export declare function isValidIdempotencyKey(key: string): boolean;
