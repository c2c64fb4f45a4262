/**
 * Minting a vendor3 signed URL with the caller's API key: `GET <SVC_VENDOR3_API_URL>/v1/convai/conversation/
 * get-signed-url?agent_id=…` with the key in the `xi-api-key` header (never in a URL, a log line or an
 * error). The answer's `signed_url` is used at once, within the session's connect deadline.
 *
 * @module
 */
import type { ApiError } from "../../errors.ts";
import { mentionsQuota, startErrors } from "../wire/handshake.ts";
import { parseRetryAfter } from "../wire/socket.ts";
import { DeadlineExceeded } from "../wire/wait.ts";
import { VENDOR3_SIGNED_URL_PATH } from "./schema.ts";

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
  /** The key, presented only as the `xi-api-key` header. */
  apiKey: string;
  /** The session's connect deadline. */
  signal: AbortSignal;
  fetch: typeof fetch;
  httpClient?: Deno.HttpClient;
}

/** Largest error body read to tell a spent quota from another refusal. */
const MAX_ERROR_BODY_BYTES = 16 * 1024;

/**
 * Mints a signed URL. Throws a {@link MintError}: 429, or a refusal whose body says the quota is spent (the
 * vendor answers spent credit with `401 {"detail":{"status":"quota_exceeded","message":"This request
 * exceeds your quota of …"}}`, home-assistant/core#160414) → quota (with its `Retry-After`); 502/503/504 or
 * no answer → unavailable; the deadline → timeout; any other refusal (401, 403, 404, 422, …) or an answer
 * without a `wss://` conversation URL → downstream failure.
 */
export function mintSignedUrl(req: MintRequest): Promise<string> {
  const url = `${req.apiUrl}${SIGNED_URL_MINT_PATH}?agent_id=${encodeURIComponent(req.agentId)}`;
  const init: RequestInit & { client?: Deno.HttpClient } = {
    headers: { "xi-api-key": req.apiKey, accept: "application/json" },
    signal: req.signal,
    redirect: "error",
    ...(req.httpClient ? { client: req.httpClient } : {}),
  };
  return send(req, url, init);
}

async function send(req: MintRequest, url: string, init: RequestInit): Promise<string> {
  let res: Response;
  try {
    res = await req.fetch(url, init);
  } catch {
    if (req.signal.reason instanceof DeadlineExceeded) {
      throw new MintError(startErrors.timeout(), "mint_timeout");
    }
    throw new MintError(startErrors.unavailable(), "mint_unreachable");
  }
  if (res.status !== 200) {
    const retryAfter = parseRetryAfter(res.headers.get("retry-after"));
    if (res.status === 429) {
      await res.body?.cancel().catch(() => {});
      throw new MintError(startErrors.quota(retryAfter), "mint_429");
    }
    if (res.status >= 400 && res.status < 500 && await spentQuota(res)) {
      throw new MintError(startErrors.quota(retryAfter), `mint_${res.status}_quota`);
    }
    await res.body?.cancel().catch(() => {});
    if (res.status === 502 || res.status === 503 || res.status === 504) {
      throw new MintError(startErrors.unavailable(retryAfter), `mint_${res.status}`);
    }
    throw new MintError(startErrors.downstream(), `mint_${res.status}`);
  }
  let body: unknown;
  try {
    body = await res.json();
  } catch {
    if (req.signal.reason instanceof DeadlineExceeded) {
      throw new MintError(startErrors.timeout(), "mint_timeout");
    }
    throw new MintError(startErrors.downstream(), "mint_bad_answer");
  }
  const signed = (body as { signed_url?: unknown } | null)?.signed_url;
  if (typeof signed !== "string" || !isConversationUrl(signed)) {
    throw new MintError(startErrors.downstream(), "mint_bad_answer");
  }
  return signed;
}

/**
 * Whether a refusal's body is the vendor's `{"detail":{"status":"quota_exceeded",…}}` (read up to 16 KiB;
 * the body is consumed or cancelled either way).
 */
async function spentQuota(res: Response): Promise<boolean> {
  if (!res.body) return false;
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let done = false;
  try {
    while (text.length <= MAX_ERROR_BODY_BYTES) {
      const chunk = await reader.read();
      if (chunk.done) {
        done = true;
        break;
      }
      text += decoder.decode(chunk.value, { stream: true });
    }
  } catch {
    return false;
  } finally {
    if (!done) await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
  if (!done) return false;
  try {
    const detail = (JSON.parse(text) as { detail?: { status?: unknown } } | null)?.detail;
    return detail?.status === "quota_exceeded" || mentionsQuota(detail?.status);
  } catch {
    return false;
  }
}

function isConversationUrl(raw: string): boolean {
  try {
    const url = new URL(raw);
    return url.protocol === "wss:" && url.pathname === VENDOR3_SIGNED_URL_PATH;
  } catch {
    return false;
  }
}
