/**
 * Opaque, prefixed identifiers (Stripe style): 128 bits of randomness in base62.
 *
 * @module
 */

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** `length` base62 characters from the CSPRNG (rejection sampling, no modulo bias). */
export function randomBase62(length: number): string {
  let out = "";
  while (out.length < length) {
    const bytes = crypto.getRandomValues(new Uint8Array(length * 2));
    for (const b of bytes) {
      if (b < 248 && out.length < length) out += BASE62[b % 62];
    }
  }
  return out;
}

/** Encodes a non-negative integer in base62, left-padded with "0" to `width`. */
export function toBase62(n: number, width: number): string {
  let s = "";
  let v = Math.floor(n);
  do {
    s = BASE62[v % 62] + s;
    v = Math.floor(v / 62);
  } while (v > 0);
  return s.padStart(width, "0");
}

/** A new session id: `session:` + 22 base62 characters. */
export function newSessionId(): string {
  return `session:${randomBase62(22)}`;
}

/** A new project avatar id: `av_` + 22 base62 characters. */
export function newAvatarId(): string {
  return `av_${randomBase62(22)}`;
}

/** A new API key id: `svc_key_` + 22 base62 characters. */
export function newKeyId(): string {
  return `svc_key_${randomBase62(22)}`;
}

/**
 * Longest session or API key id accepted from a request. The service issues 30-character ids; a longer one
 * cannot exist, and would not fit Deno KV's 2 KiB key limit, so it is refused before any storage call.
 */
export const MAX_ID_LENGTH = 255;

/** Pattern of session ids (from the interface specification). */
export const SESSION_ID_PATTERN = /^session:[A-Za-z0-9_-]+$/;
/** Pattern of API key ids (from the interface specification). */
export const AVATAR_ID_PATTERN = /^av_[A-Za-z0-9]{1,64}$/;
/** A key id. */
export const KEY_ID_PATTERN = /^svc_key_[A-Za-z0-9_-]+$/;
/** Pattern of project ids accepted by the bootstrap command. */
export const PROJECT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
