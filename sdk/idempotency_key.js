// @ts-check
/**
 * Idempotency keys for `createSession`. Documentation: `idempotency_key.d.ts`.
 *
 * @module
 */

/**
 * A fresh random UUID v4.
 * @returns {string}
 */
export function newIdempotencyKey() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * Whether `key` is 1..255 printable ASCII characters.
 * @param {string} key
 * @returns {boolean}
 */
export function isValidIdempotencyKey(key) {
  return typeof key === "string" && /^[\x21-\x7e]{1,255}$/.test(key);
}
