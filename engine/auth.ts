/**
 * Bearer token checking for the engine's upgrade requests, in constant time.
 *
 * @module
 */

/**
 * Compares two byte strings of equal length in time independent of where they differ. Strings of different
 * lengths are unequal (the length itself is not hidden: compare digests to hide it).
 *
 * @param a first value
 * @param b second value
 * @returns whether they are equal
 */
export function timingSafeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
}

/**
 * Checks an `Authorization` header against the expected bearer token. Both sides are hashed (SHA-256) before
 * a constant-time comparison, so neither the content nor the length of the token leaks through timing. The
 * scheme name is case-insensitive (RFC 7235); the token is compared exactly.
 *
 * @param header the request's `Authorization` header, or null when absent
 * @param token the configured token (must not be empty)
 * @returns whether the header carries exactly `Bearer <token>`
 */
export async function bearerTokenMatches(header: string | null, token: string): Promise<boolean> {
  if (token === "") return false;
  const match = header?.match(/^\s*Bearer\s+(\S+)\s*$/i);
  const presented = match ? match[1] : "";
  const [expected, actual] = await Promise.all([sha256(token), sha256(presented)]);
  return timingSafeEqual(expected, actual) && match != null;
}
