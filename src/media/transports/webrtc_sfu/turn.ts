/**
 * `stream_metadata.ice_servers` of a `webrtc_sfu` session: the configured STUN URLs as they are, and the
 * TURN URLs with time-limited credentials in coturn's `use-auth-secret` scheme (the "TURN REST API"):
 * `username = "<expiry unix s>:<session id>"` (the id's own colons made dashes, so the expiry is the only
 * field before a colon), `credential = base64(HMAC-SHA1(static-auth-secret, username))`.
 * coturn recomputes the credential from its shared secret and refuses it once the expiry has passed, so
 * the service stores nothing and a leaked credential dies with the client token it was minted with.
 *
 * @module
 */
import type { IceServer } from "../../../vocabulary/schemas.ts";

/** One TURN REST credential. */
export async function turnCredential(
  secret: string,
  id: string,
  expiresAtMs: number,
): Promise<{ username: string; credential: string }> {
  const username = `${Math.floor(expiresAtMs / 1000)}:${id.replaceAll(":", "-")}`;
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-1" },
    false,
    ["sign"],
  );
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(username)));
  return { username, credential: btoa(String.fromCharCode(...mac)) };
}

/**
 * The ICE servers for one session: STUN URLs in one entry, TURN URLs in another with a credential valid
 * until `expiresAtMs` (the client token's expiry). Empty when no URL is configured.
 */
export async function iceServersFor(
  config: { iceUrls: string[]; turnSecret: string | null },
  sessionId: string,
  expiresAtMs: number,
): Promise<IceServer[]> {
  const stun = config.iceUrls.filter((u) => /^stuns?:/.test(u));
  const turn = config.iceUrls.filter((u) => /^turns?:/.test(u));
  const out: IceServer[] = [];
  if (stun.length) out.push({ urls: stun });
  if (turn.length && config.turnSecret) {
    out.push({ urls: turn, ...(await turnCredential(config.turnSecret, sessionId, expiresAtMs)) });
  }
  return out;
}
