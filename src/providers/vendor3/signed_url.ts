/**
 * Rules of the vendor3 signed URLs a caller passes (`provider_config.vendor3.signed_url`): `wss://`, the
 * conversation path, a host of the deployment's allow-list (`SVC_VENDOR3_SIGNED_URL_HOSTS`: the vendor's
 * hosts, regional ones included), and its 15 minutes of validity.
 *
 * The validity is read from the URL when it can be: the vendor's signatures seen in public code
 * (`conversation_signature=cvtkn_…`) end in a ULID whose first 48 bits are its minting time in milliseconds
 * (docs/providers.md says what this relies on). A signature in another form is used as given and the vendor
 * judges it.
 *
 * @module
 */
import { VENDOR3_SIGNED_URL_PATH } from "./schema.ts";

/** How long a signed URL may be used to start a conversation. */
export const SIGNED_URL_VALIDITY_MS = 15 * 60_000;

/** Crockford base32, the ULID alphabet. */
const CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz";
/** A signature token ending in a ULID. */
const SIGNATURE = /^cvtkn_[0-9a-z]*?([0-7][0-9a-hjkmnp-tv-z]{25})$/i;
/** Minting times outside [2020, now + 1 day] are not believed. */
const EARLIEST = Date.UTC(2020, 0, 1);

/** The minting time (Unix ms) a signed URL's signature carries, or null when it carries none we can read. */
export function signedUrlMintedAt(url: URL, now: number): number | null {
  const token = url.searchParams.get("conversation_signature") ?? url.searchParams.get("token");
  const ulid = token ? SIGNATURE.exec(token)?.[1]?.toLowerCase() : undefined;
  if (!ulid) return null;
  let ms = 0;
  for (const c of ulid.slice(0, 10)) ms = ms * 32 + CROCKFORD.indexOf(c);
  return ms >= EARLIEST && ms <= now + 86_400_000 ? ms : null;
}

/**
 * Why a caller's signed URL cannot be used (a message naming no value), or null when it can: not `wss://`,
 * another path, a host outside `allowedHosts`, or older than 15 minutes.
 */
export function signedUrlProblem(raw: string, allowedHosts: readonly string[], now: number): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "provider_config: signed_url is not a URL";
  }
  if (url.protocol !== "wss:" || url.pathname !== VENDOR3_SIGNED_URL_PATH) {
    return `provider_config: signed_url must be a wss:// URL with path ${VENDOR3_SIGNED_URL_PATH}`;
  }
  if (url.username || url.password || !allowedHosts.includes(url.hostname.toLowerCase())) {
    return "provider_config: signed_url must be on an allowed host of the provider";
  }
  const minted = signedUrlMintedAt(url, now);
  if (minted !== null && now - minted > SIGNED_URL_VALIDITY_MS) {
    return "provider_config: signed_url has expired (signed URLs are valid for 15 minutes; mint a new one)";
  }
  return null;
}
