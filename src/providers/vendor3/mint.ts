/**
 * Minting a vendor3 signed URL with the caller's API key: `GET <SVC_VENDOR3_API_URL>/v1/convai/conversation/
 * get-signed-url?agent_id=…` with the key in the `xi-api-key` header — written into the request from the
 * key's bytes (never a string, a URL, a log line or an error) by the bridges' own HTTP client
 * (`../wire/http_request.ts`). The answer is read as bytes too: the `signed_url` of its JSON (a credential: it
 * carries the conversation's signature) is decoded into a buffer of its own, used at once within the
 * session's connect deadline, and zeroed by the caller.
 *
 * @module
 */
import type { ApiError } from "../../errors.ts";
import { readStringMember } from "../../auth/credential_json.ts";
import type { ByteBuffer } from "../../auth/credential_bytes.ts";
import { pathIs, splitUrl, urlHost } from "../../auth/credential_url.ts";
import { mentionsQuota, startErrors } from "../wire/handshake.ts";
import { endpointOf } from "../wire/endpoint.ts";
import { parseRetryAfter, WireError } from "../wire/failure.ts";
import { type HttpAnswer, httpRequest } from "../wire/http_request.ts";
import { DeadlineExceeded } from "../wire/wait.ts";
import { VENDOR3_SIGNED_URL_PATH } from "../definitions/vendor3_signed_url.ts";

/** The REST path that mints signed URLs. */
export const SIGNED_URL_MINT_PATH = "/v1/convai/conversation/get-signed-url";

/** A refused or failed mint, with what to log about it (never the key or a URL). */
export class MintError extends Error {
  override name = "MintError";
  constructor(readonly error: ApiError, readonly kind: string) {
    super(`signed URL mint failed: ${kind}`);
  }
}

/** What a mint takes. */
export interface MintRequest {
  apiUrl: string;
  agentId: string;
  /** The key's bytes (borrowed from the credential holder), presented only as the `xi-api-key` header. */
  apiKey: Uint8Array;
  /** The session's connect deadline. */
  signal: AbortSignal;
  /** Extra CA certificates trusted besides the bundled roots. */
  caCerts: readonly string[];
}

/** Largest answer read (a signed URL answer is a few hundred bytes). */
const MAX_ANSWER_BYTES = 256 * 1024;
/** Largest error body read to tell a spent quota from another refusal. */
const MAX_ERROR_BODY_BYTES = 16 * 1024;

/**
 * Mints a signed URL; resolves with its bytes in a buffer the caller zeroes. Throws a {@link MintError}:
 * 429, or a refusal whose body says the quota is spent (the vendor answers spent credit with `401
 * {"detail":{"status":"quota_exceeded","message":"This request exceeds your quota of …"}}`,
 * home-assistant/core#160414) → quota (with its `Retry-After`); 502/503/504 or no answer → unavailable;
 * the deadline → timeout; a key that no HTTP header can carry → misconfigured; any other refusal (401,
 * 403, 404, 422, …) or an answer without a `wss://` conversation URL → downstream failure.
 */
export async function mintSignedUrl(req: MintRequest): Promise<ByteBuffer> {
  const url = `${req.apiUrl}${SIGNED_URL_MINT_PATH}?agent_id=${encodeURIComponent(req.agentId)}`;
  let res: HttpAnswer;
  try {
    res = await httpRequest({
      method: "GET",
      endpoint: endpointOf(url),
      headers: [
        { name: "xi-api-key", value: [req.apiKey] },
        { name: "Accept", value: ["application/json"] },
      ],
      signal: req.signal,
      caCerts: req.caCerts,
      maxBody: MAX_ANSWER_BYTES,
    });
  } catch (err) {
    if (req.signal.reason instanceof DeadlineExceeded) {
      throw new MintError(startErrors.timeout(), "mint_timeout");
    }
    if (err instanceof WireError && err.failure.kind === "invalid") {
      throw new MintError(startErrors.unusable(), "mint_invalid");
    }
    throw new MintError(startErrors.unavailable(), "mint_unreachable");
  }
  try {
    if (res.status !== 200) {
      const retryAfter = parseRetryAfter(res.headers.get("retry-after"));
      if (res.status === 429) throw new MintError(startErrors.quota(retryAfter), "mint_429");
      if (res.status >= 400 && res.status < 500 && spentQuota(res.body.view())) {
        throw new MintError(startErrors.quota(retryAfter), `mint_${res.status}_quota`);
      }
      if (res.status === 502 || res.status === 503 || res.status === 504) {
        throw new MintError(startErrors.unavailable(retryAfter), `mint_${res.status}`);
      }
      throw new MintError(startErrors.downstream(), `mint_${res.status}`);
    }
    const signed = readStringMember(res.body.view(), "signed_url");
    if (!signed || !isConversationUrl(signed.view())) {
      signed?.zero();
      throw new MintError(startErrors.downstream(), "mint_bad_answer");
    }
    return signed;
  } finally {
    res.body.zero();
  }
}

/** Whether a refusal's body (an error answer, not a credential) is the vendor's `{"detail":{"status":"quota_exceeded",…}}`. */
function spentQuota(body: Uint8Array): boolean {
  if (body.length > MAX_ERROR_BODY_BYTES) return false;
  try {
    const detail = (JSON.parse(new TextDecoder().decode(body)) as { detail?: { status?: unknown } } | null)
      ?.detail;
    return detail?.status === "quota_exceeded" || mentionsQuota(detail?.status);
  } catch {
    return false;
  }
}

/** Whether `bytes` is a `wss://` URL with the conversation path (read without making it a string). */
function isConversationUrl(bytes: Uint8Array): boolean {
  const split = splitUrl(bytes, "wss");
  return !!split && !!urlHost(bytes, split) && pathIs(bytes, split, VENDOR3_SIGNED_URL_PATH);
}
