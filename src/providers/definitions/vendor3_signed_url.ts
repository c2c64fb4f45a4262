/**
 * Rules of the vendor3 signed URLs a caller passes (`provider_config.vendor3.signed_url`): `wss://`, the
 * conversation path, a host of the deployment's allow-list (`SVC_VENDOR3_SIGNED_URL_HOSTS`: the vendor's
 * hosts, regional ones included), and its 15 minutes of validity — read from the URL's bytes (a signed URL
 * is a credential: it never becomes a string; only its host does, see `../wire/byte_url.ts`).
 *
 * The validity is read from the URL when it can be: the vendor's signatures seen in public code
 * (`conversation_signature=cvtkn_…`) end in a ULID whose first 48 bits are its minting time in milliseconds
 * (docs/providers.md says what this relies on). A signature in another form is used as given and the vendor
 * judges it.
 *
 * @module
 */
import { bytesEqual } from "../../auth/credential_bytes.ts";
import { eachQueryPair, pathIs, splitUrl, urlHost, type UrlSplit } from "../../auth/credential_url.ts";

/** Path a vendor3 `signed_url` must have. */
export const VENDOR3_SIGNED_URL_PATH = "/v1/convai/conversation";

/** How long a signed URL may be used to start a conversation. */
export const SIGNED_URL_VALIDITY_MS = 15 * 60_000;

/** Crockford base32, the ULID alphabet: each ASCII byte's value (either case), or -1. */
const CROCKFORD = (() => {
  const table = new Int8Array(128).fill(-1);
  [..."0123456789abcdefghjkmnpqrstvwxyz"].forEach((c, i) => {
    table[c.charCodeAt(0)] = i;
    table[c.toUpperCase().charCodeAt(0)] = i;
  });
  return table;
})();
/** Minting times outside [2020, now + 1 day] are not believed. */
const EARLIEST = Date.UTC(2020, 0, 1);

function lower(b: number): number {
  return b >= 0x41 && b <= 0x5a ? b | 0x20 : b;
}

function isAlnum(b: number): boolean {
  const l = lower(b);
  return (b >= 0x30 && b <= 0x39) || (l >= 0x61 && l <= 0x7a);
}

/**
 * The minting time a signature's bytes carry: `cvtkn_`, letters and digits, ending in a ULID (its first
 * character 0–7, the rest of the Crockford alphabet; any case) — as the expression
 * `/^cvtkn_[0-9a-z]*?([0-7][0-9a-hjkmnp-tv-z]{25})$/i` reads the decoded value.
 */
function mintedAtOfSignature(v: Uint8Array, now: number): number | null {
  if (v.length < 6 + 26) return null;
  const prefix = "cvtkn_";
  for (let i = 0; i < 6; i++) if (lower(v[i]) !== prefix.charCodeAt(i)) return null;
  for (let i = 6; i < v.length; i++) if (!isAlnum(v[i])) return null;
  const u = v.length - 26;
  if (v[u] < 0x30 || v[u] > 0x37) return null;
  for (let i = u + 1; i < v.length; i++) if ((CROCKFORD[v[i]] ?? -1) < 0) return null;
  let ms = 0;
  for (let i = u; i < u + 10; i++) ms = ms * 32 + CROCKFORD[v[i]];
  return ms >= EARLIEST && ms <= now + 86_400_000 ? ms : null;
}

/**
 * The minting time (Unix ms) a signed URL's signature carries (`conversation_signature`, else `token`, the
 * first of each as `URLSearchParams.get` finds it), or null when it carries none we can read.
 */
export function signedUrlMintedAt(bytes: Uint8Array, split: UrlSplit, now: number): number | null {
  let signature: number | null | undefined;
  let token: number | null | undefined;
  eachQueryPair(bytes, split, (name, value) => {
    if (bytesEqual(name, 0, name.length, "conversation_signature")) {
      signature = mintedAtOfSignature(value, now);
      return true;
    }
    if (token === undefined && bytesEqual(name, 0, name.length, "token")) {
      token = mintedAtOfSignature(value, now);
    }
    return false;
  });
  return signature !== undefined ? signature : token ?? null;
}

/**
 * Why a caller's signed URL (UTF-8 bytes) cannot be used (a message naming no value), or null when it
 * can: not `wss://`, another path, userinfo or a host outside `allowedHosts`, or older than 15 minutes.
 */
export function signedUrlProblem(
  bytes: Uint8Array,
  allowedHosts: readonly string[],
  now: number,
): string | null {
  const split = splitUrl(bytes, "wss");
  const host = split && urlHost(bytes, split);
  if (!split || !host || !pathIs(bytes, split, VENDOR3_SIGNED_URL_PATH)) {
    return `provider_config: signed_url must be a wss:// URL with path ${VENDOR3_SIGNED_URL_PATH}`;
  }
  const u = split.userinfo;
  if (u?.usernameNonEmpty || u?.passwordNonEmpty || !allowedHosts.includes(host.hostname.toLowerCase())) {
    return "provider_config: signed_url must be on an allowed host of the provider";
  }
  const minted = signedUrlMintedAt(bytes, split, now);
  if (minted !== null && now - minted > SIGNED_URL_VALIDITY_MS) {
    return "provider_config: signed_url has expired (signed URLs are valid for 15 minutes; mint a new one)";
  }
  return null;
}
