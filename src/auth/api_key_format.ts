/**
 * API key plaintext format: `svc_sk_` + 32 base62 random characters (≈190 bits) + a 6-character base62
 * CRC32 checksum of the random part (GitHub's token layout). The prefix lets secret scanners recognise
 * leaked keys; the checksum lets the service reject malformed keys before any storage lookup.
 *
 * Only the SHA-256 of the whole plaintext is ever stored.
 *
 * @module
 */
import { crc32 } from "node:zlib";
import { randomBase62, toBase62 } from "../ids.ts";
import { sha256Hex } from "./sha256.ts";

/** Fixed prefix of every API key plaintext. */
export const API_KEY_PREFIX = "svc_sk_";
const RANDOM_LENGTH = 32;
const CHECKSUM_LENGTH = 6;
const PATTERN = new RegExp(`^${API_KEY_PREFIX}[0-9A-Za-z]{${RANDOM_LENGTH + CHECKSUM_LENGTH}}$`);

function checksum(random: string): string {
  return toBase62(crc32(random) >>> 0, CHECKSUM_LENGTH);
}

/** Generates a new API key plaintext. */
export function generateApiKey(): string {
  const random = randomBase62(RANDOM_LENGTH);
  return `${API_KEY_PREFIX}${random}${checksum(random)}`;
}

/** True when `key` has the prefix, length and alphabet of a key (the checksum is not checked). */
export function hasApiKeyShape(key: string): boolean {
  return PATTERN.test(key);
}

/** True when `key` has the prefix, length, alphabet and a valid checksum. */
export function isWellFormedApiKey(key: string): boolean {
  if (!PATTERN.test(key)) return false;
  const random = key.slice(API_KEY_PREFIX.length, API_KEY_PREFIX.length + RANDOM_LENGTH);
  return key.endsWith(checksum(random));
}

/**
 * Lowercase hex SHA-256 of the key plaintext: the only form in which a key is stored. Synchronous and
 * allocation-free (`sha256.ts`, 0.6 µs): every authenticated request hashes the presented key.
 */
export function hashApiKey(key: string): string {
  return sha256Hex(key);
}
