/**
 * The opt-in retry policy of the client.
 *
 * An attempt is repeated only when
 * - the service marked its error retryable (the body carried `retry_after`: rate limits, a busy or
 *   unreachable engine, a store outage, an Idempotency-Key still in progress, …): on every operation, after
 *   `retry_after` seconds; or
 * - no usable answer arrived (`SDK_NETWORK_ERROR`, or a 502/503/504 without the service's error object),
 *   and repeating the operation is safe: `getSession`, `getSessionMetrics`, `listSessions`, `listApiKeys`,
 *   `revokeApiKey` (idempotent), `createClientToken` (only mints a token) and `createSession` (it always
 *   sends an `Idempotency-Key`, so a repeat replays the first session instead of starting a second). Never `createApiKey` (a repeat could
 *   mint a second key whose plaintext nobody saw) nor `endSession` (a repeat of a successful end answers
 *   409). These waits back off exponentially from `networkBackoffMs` (at most 8 s), or follow a
 *   `Retry-After` header.
 *
 * Every wait is stretched by a random fraction in `[0, jitter)` of itself, so it is never shorter than
 * what the service asked for. Attempts are bounded by `maxAttempts`, and no wait is started that would end
 * more than `maxElapsedMs` after the first attempt started (the last error is thrown instead). An attempt in
 * flight is never cut short: pass a `signal` to a call to bound it.
 *
 * @module
 */
import type { ApiError } from "./api_error.d.ts";

/** Settings of the retry policy; every field is optional. */
export interface RetryOptions {
  /** Most attempts in all, the first one included (1 disables retries). Default 3. */
  maxAttempts?: number;
  /** Time budget in ms, counted from the start of the first attempt. Default 60 000. */
  maxElapsedMs?: number;
  /** Each wait is stretched by a random fraction in `[0, jitter)` of itself (0..1). Default 0.2. */
  jitter?: number;
  /** Repeat safe operations that got no usable answer. Default `true`. */
  retryNetworkErrors?: boolean;
  /** First wait after a network error, in ms; doubled on each further one, at most 8 000. Default 500. */
  networkBackoffMs?: number;
  /** Waits `ms` (rejects with the signal's reason on abort). Default: a `setTimeout`. Inject it in tests. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** The clock, in ms. Default `Date.now`. */
  now?: () => number;
  /** Random numbers in `[0, 1)` for the jitter. Default `Math.random`. */
  random?: () => number;
  /** Called before each wait (for logs or a progress display). */
  onRetry?: (event: RetryEvent) => void;
}

/** What {@link RetryOptions.onRetry} is told before a wait. */
export interface RetryEvent {
  /** The operation, e.g. `"createSession"`. */
  operation: string;
  /** The attempt that just failed (1 for the first). */
  attempt: number;
  /** How long the policy waits before the next attempt, in ms. */
  delayMs: number;
  /** Why the attempt failed. */
  error: ApiError;
}

/** A policy with every setting filled in. */
export type RetryPolicy = Required<Omit<RetryOptions, "onRetry">> & Pick<RetryOptions, "onRetry">;

/** The default settings (`retry: true`). */
export declare const DEFAULT_RETRY: Readonly<
  Required<
    Pick<RetryOptions, "maxAttempts" | "maxElapsedMs" | "jitter" | "retryNetworkErrors" | "networkBackoffMs">
  >
>;

/**
 * Turns the `retry` option into a policy: `undefined` or `false` → `null` (no retries), `true` → the
 * defaults, an object → the defaults overridden by its fields. Throws a `TypeError` for invalid settings.
 */
export declare function resolveRetryPolicy(option: boolean | RetryOptions | undefined): RetryPolicy | null;

/** How an operation may be repeated. */
export interface RetryTarget {
  /** The operation's name (reported to `onRetry`). */
  operation: string;
  /** Whether repeating it after an unknown outcome is safe (see the module documentation). */
  safe: boolean;
}

/**
 * The wait in ms before attempt `attempt + 1` after `error`, or `null` to give up. Pure: the policy's
 * `random` supplies the jitter; `elapsedMs` is the time since the first attempt started.
 */
export declare function retryDelay(
  policy: RetryPolicy,
  target: RetryTarget,
  error: unknown,
  attempt: number,
  elapsedMs: number,
): number | null;

/**
 * Runs `attempt` until it resolves, or the policy gives up (the last error is thrown), or `signal`
 * aborts (its reason is thrown). With a `null` policy, runs it once.
 */
export declare function withRetry<T>(
  policy: RetryPolicy | null,
  target: RetryTarget,
  attempt: () => Promise<T>,
  signal?: AbortSignal,
): Promise<T>;

/** The default `sleep`: a `setTimeout` that an abort signal clears (rejecting with its reason). */
export declare function sleep(ms: number, signal?: AbortSignal): Promise<void>;
