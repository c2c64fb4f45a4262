/**
 * Shared fixtures: TLS material for test engines (generated once per test module) and request bodies.
 *
 * @module
 */
import { generateEngineTls } from "../engine/mod.ts";

/** TLS material for engines in tests: a CA and a server certificate for localhost. */
export const testTls = await generateEngineTls();

/** A valid external_engine create body for `url` with a bearer token. */
export function engineBody(url: string, extra: Record<string, unknown> = {}, token = "engine-token") {
  return {
    provider_type: "external_engine",
    provider_config: { external_engine: { url, auth_headers: { Authorization: `Bearer ${token}` } } },
    ...extra,
  };
}

/** Asserts the flat error body contract and returns the body. */
export function checkErrorBody(
  res: { status: number; headers: Headers; body: Record<string, unknown> },
  expected: { status: number; code: string; retryable?: boolean },
): Record<string, unknown> {
  const where = `${res.status} ${JSON.stringify(res.body)}`;
  if (res.status !== expected.status) throw new Error(`expected status ${expected.status}, got ${where}`);
  const b = res.body;
  if (b.code !== expected.code) throw new Error(`expected code ${expected.code}, got ${where}`);
  if (typeof b.message !== "string" || b.message.length === 0) throw new Error(`bad message: ${where}`);
  if (b.request_id !== res.headers.get("x-request-id")) {
    throw new Error(`request_id != X-Request-Id: ${where}`);
  }
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(String(b.request_id))) {
    throw new Error(`request_id is not a UUID: ${where}`);
  }
  if (!/^https:\/\/\S+$/.test(String(b.doc_url))) throw new Error(`doc_url is not https: ${where}`);
  const keys = Object.keys(b).sort().join(",");
  if (expected.retryable) {
    if (
      !Number.isInteger(b.retry_after) || (b.retry_after as number) < 1 || (b.retry_after as number) > 3600
    ) {
      throw new Error(`retry_after missing/out of range: ${where}`);
    }
    if (res.headers.get("retry-after") !== String(b.retry_after)) {
      throw new Error(`Retry-After header mismatch: ${where}`);
    }
    if (keys !== "code,doc_url,message,request_id,retry_after") throw new Error(`unexpected fields: ${keys}`);
  } else {
    if ("retry_after" in b || res.headers.has("retry-after")) {
      throw new Error(`retry_after on non-retryable: ${where}`);
    }
    if (keys !== "code,doc_url,message,request_id") throw new Error(`unexpected fields: ${keys}`);
  }
  return b;
}
