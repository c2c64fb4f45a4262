/**
 * A hostile-client fuzz campaign against a real service on loopback, in the shape of the outside audit:
 * malformed and hostile requests on every route (bad JSON, wrong types, huge and odd ids, unicode, headers,
 * methods, bodies over the limit or too slow, forged keys and tokens) plus media WebSocket connections with
 * forged, expired and misdirected tokens. Every answer is checked against the contract:
 *
 * - no 5xx except the documented answers of a session start refused upstream (the provider types this
 *   deployment does not run answer 503 `SVC_PROVIDER_UNAVAILABLE`, an engine refusing mutated credentials
 *   502, …), counted apart; an internal error (500) or a storage 503 is always unexpected;
 * - every 4xx/5xx body is the flat error body: exactly `code, message, request_id, doc_url[, retry_after]`,
 *   a catalog code with its catalog status, `request_id` equal to `X-Request-Id`, an https `doc_url`,
 *   `retry_after` (and `Retry-After`) exactly for retryable codes, no provider type value in the message;
 * - every `/v1` and demo API answer carries `Cache-Control: no-store`; every answer an `X-Request-Id`;
 * - a refused WebSocket closes with a documented code (4401, 4403, 4404, 4429), never an abrupt drop;
 * - a method no route serves (any case: `get`, `TRACE`, `FOO`, `PUT`, …) answers 405 or 404, never
 *   anything else (such requests go out over a raw connection: fetch upper-cases `get` and refuses `TRACE`);
 * - the service logs no error line.
 *
 * Deterministic for a seed; bounded in count and time. Used by `deno task fuzz` (bench/fuzz.ts) and, at a
 * small count, by tests/api/fuzz_test.ts.
 *
 * @module
 */
import { sign } from "hono/jwt";
import { TokenService } from "../src/auth/tokens.ts";
import { OffsetClock } from "../src/clock.ts";
import { loadConfig } from "../src/config.ts";
import { ERROR_CATALOG } from "../src/errors.ts";
import { createApiKey, revokeApiKey } from "../src/kv/api_keys.ts";
import { createLogger } from "../src/log.ts";
import { PROVIDER_TYPES } from "../src/providers/definitions/provider_types.ts";
import { compose, openKv, type Service } from "../src/app/compose.ts";
// The worker side, loaded with this module rather than by compose()'s `await import()`: its lip-sync module
// opens libespeak-ng when first imported, which a test's resource sanitizer (tests/api/fuzz_test.ts) would
// count as the test's own.
import "../src/app/worker_side.ts";

/** The token signing secret of the fuzzed service (the campaign forges tokens with and without it). */
const SECRET = "fuzz-secret-0123456789abcdef0123456789abcdef";

/** What the campaign attacks. */
export interface FuzzTarget {
  /** Base URL, `http://127.0.0.1:<port>`. */
  base: string;
  /** API keys: every scope; read-only; another project's; revoked. */
  keys: { all: string; readOnly: string; other: string; revoked: string };
  /** Live sessions of the `all` key's project (they stay live during the WebSocket part). */
  sessionIds: string[];
  /** The reference engine sessions can start on. */
  engine: { url: string; token: string };
  /** Every log line the service wrote. */
  logs: string[];
  close(): Promise<void>;
}

/** Campaign bounds. */
export interface FuzzOptions {
  /** HTTP requests to send. */
  count: number;
  /** WebSocket connections to try. */
  websockets: number;
  /** Wall-clock budget of the whole campaign, s (it stops early, and says so). */
  seconds: number;
  /** Requests in flight at once. */
  concurrency: number;
  seed: number;
}

/** What the campaign saw. */
export interface FuzzReport {
  seed: number;
  requests: number;
  /** Requests the client itself could not form (e.g. a header value fetch refuses); not sent. */
  not_sent: number;
  by_status: Record<string, number>;
  five_xx: number;
  five_xx_by_code: Record<string, number>;
  /** 5xx other than a documented answer of a session start refused upstream: must be 0. */
  unexpected_five_xx: number;
  /** Error answers whose body or headers break the contract: must be 0. */
  malformed_error_bodies: number;
  /** Success answers without `X-Request-Id`, or `/v1` / demo API ones without `no-store`: must be 0. */
  bad_success_headers: number;
  /** Connections reset or timed out before an answer: must be 0. */
  transport_errors: number;
  /**
   * Bare 400s (no body, no `X-Request-Id`, connection closed) from Deno's HTTP server itself, before the
   * service sees the request: a request with a body asking for a protocol upgrade (`Upgrade` +
   * `Connection: upgrade`).
   * Not reachable from the application; counted apart.
   */
  server_refusals: number;
  /** A method no route serves answered with something else than 405 or 404: must be 0. */
  bad_method_answers: number;
  websockets: { tried: number; opened: number; close_codes: Record<string, number>; unexpected: number };
  /** Error lines in the service log: must be 0. */
  error_log_lines: number;
  /** Up to 20 examples of each problem. */
  samples: string[];
  seconds: number;
  stopped_by_time: boolean;
}

// ---------------------------------------------------------------------------------------------- target

/** Starts a real service (KV file, reference engine, media plane, demo page) with keys and live sessions. */
export async function startFuzzTarget(): Promise<FuzzTarget> {
  const dir = await Deno.makeTempDir({ prefix: "svc_fuzz_" });
  const kvPath = `${dir}/svc.kv`;
  const logs: string[] = [];
  const scopes = ["sessions:read", "sessions:write", "api_keys:read", "api_keys:write"] as const;
  // Keys are minted before the service opens the file.
  const kv = await openKv(kvPath);
  const mint = async (
    projectId: string,
    s: readonly (typeof scopes)[number][],
  ) => (await createApiKey(kv, {
    projectId,
    name: "fuzz",
    scopes: [...s],
    now: Date.now(),
    createdBy: "bootstrap",
  }));
  const all = await mint("proj_fuzz", scopes);
  const readOnly = await mint("proj_fuzz", ["sessions:read"]);
  const other = await mint("proj_other", scopes);
  const revoked = await mint("proj_fuzz", scopes);
  await revokeApiKey(kv, "proj_fuzz", revoked.record.key_id, Date.now());
  kv.close();

  const config = loadConfig({
    PORT: "0",
    SVC_KV: kvPath,
    SVC_TOKEN_SECRET: SECRET,
    SVC_REFERENCE_ENGINE_PORT: "0",
    SVC_REFERENCE_ENGINE_DIR: `${dir}/engine`,
    SVC_RATE_LIMIT_PER_MINUTE: "1000000",
    SVC_RATE_LIMIT_BURST: "100000",
    SVC_MAX_CONCURRENT_SESSIONS: "3",
    SVC_RENDER_CAPACITY: "20",
    SVC_RENDER_WIDTH: "256",
    SVC_RENDER_HEIGHT: "256",
    SVC_BODY_TIMEOUT_S: "2",
  });
  const service: Service = await compose(config, { logger: createLogger({ sink: (l) => logs.push(l) }) });
  const engine = service.referenceEngine!;
  const target: FuzzTarget = {
    base: service.url!,
    keys: {
      all: all.plaintext,
      readOnly: readOnly.plaintext,
      other: other.plaintext,
      revoked: revoked.plaintext,
    },
    sessionIds: [],
    engine: { url: engine.url, token: engine.token },
    logs,
    async close() {
      await service.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
  try {
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${target.base}/v1/sessions`, {
        method: "POST",
        headers: { authorization: `Bearer ${target.keys.all}`, "content-type": "application/json" },
        body: JSON.stringify(validBodies(target).engine),
      });
      const body = await res.json();
      if (res.status !== 200) throw new Error(`fuzz target: session start answered ${res.status}`);
      target.sessionIds.push(body.session_id);
    }
  } catch (err) {
    await target.close();
    throw err;
  }
  return target;
}

// --------------------------------------------------------------------------------------------- random

/** A small seeded PRNG (mulberry32): the campaign is the same for the same seed. */
export function rng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n: number) => Math.floor(next() * n),
    chance: (p: number) => next() < p,
    pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)],
  };
}
type Rng = ReturnType<typeof rng>;

// ------------------------------------------------------------------------------------------ requests

/** One generated request. */
export interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  /** `slow`: a body that stops arriving; `flood`: 300 MiB chunked. */
  body?: string | Uint8Array | "slow" | "flood";
  /** Whether a valid session start with this body may be refused upstream (documented 5xx). */
  mayStartSession?: boolean;
}

/** Percent-encodes `s`; unpaired surrogates go out as their (invalid) UTF-8 bytes. */
const enc = (s: string) =>
  s.isWellFormed()
    ? encodeURIComponent(s)
    : s.split(/([\ud800-\udfff])/).map((p) =>
      /^[\ud800-\udfff]$/.test(p)
        ? [
          0xe0 | (p.charCodeAt(0) >> 12),
          0x80 | ((p.charCodeAt(0) >> 6) & 63),
          0x80 | (p.charCodeAt(0) & 63),
        ]
          .map((b) => `%${b.toString(16).toUpperCase()}`).join("")
        : encodeURIComponent(p)
    ).join("");

const B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const base62 = (r: Rng, n: number) => Array.from({ length: n }, () => B62[r.int(62)]).join("");

const WEIRD_STRINGS = [
  "",
  " ",
  "\u0000",
  "\t\n",
  "\ud800",
  "\udfff",
  "\u202egnp.exe",
  "\u200b",
  "\ufeff",
  "\u2028",
  "\u0085",
  "🔑",
  "é",
  "<script>alert(1)</script>",
  "' OR 1=1 --",
  "${jndi:ldap://x/a}",
  "../../etc/passwd",
  "%00",
  "%2e%2e%2f",
  "constructor",
  "__proto__",
  "toString",
  "vendor2",
  "external_engine",
  "session:abc",
  "svc_key_abc",
  "svc_sk_" + "A".repeat(38),
  "wss://localhost/v0",
  "wss://127.0.0.1:1/v0",
  " wss://engine.test/v0",
  "wss://engine.test/v0\n",
  "https://127.0.0.1/hook",
  "https://[::127.0.0.1]/hook",
  "https://localhost./hook",
  "https://hooks.example/a b",
  "http://hooks.example/",
];

function weirdValue(r: Rng, depth = 0): unknown {
  switch (r.int(14)) {
    case 0:
      return null;
    case 1:
      return r.chance(0.5);
    case 2:
      return r.pick([0, -1, 1.5, 1e308, -1e308, 2 ** 53 + 1, 8000, 48000, 24000, 7, -0]);
    case 3:
      return "x".repeat(r.pick([129, 257, 2049, 9000, 40_000]));
    case 4:
      return [];
    case 5:
      return depth < 3 ? [weirdValue(r, depth + 1)] : [];
    case 6:
      return {};
    case 7:
      return depth < 3 ? { [r.pick(WEIRD_STRINGS)]: weirdValue(r, depth + 1) } : {};
    case 8:
      return JSON.parse('{"__proto__":{"polluted":true}}');
    case 9:
      return { provider_connection_id: "pc_1" };
    case 10:
      return base62(r, r.int(40));
    default:
      return r.pick(WEIRD_STRINGS);
  }
}

/** Valid bodies the mutations start from. */
function validBodies(t: Pick<FuzzTarget, "engine">) {
  return {
    engine: {
      provider_type: "external_engine",
      provider_config: {
        external_engine: { url: t.engine.url, auth_headers: { Authorization: `Bearer ${t.engine.token}` } },
      },
    },
    vendor1: {
      provider_type: "vendor1_realtime",
      provider_config: { vendor1_realtime: { client_secret: "ek_1" } },
    },
    vendor2: { provider_type: "vendor2", provider_config: { vendor2: { access_token: "t", agent_id: "a" } } },
    vendor3: {
      provider_type: "vendor3",
      provider_config: {
        vendor3: { agent_id: "a", signed_url: "wss://api.elevenlabs.io/v1/convai/conversation?agent_id=a" },
      },
    },
    key: { name: "fuzz key", scopes: ["sessions:read"] },
  };
}

/** Applies one structural mutation somewhere inside a JSON value (in place; returns the value). */
function mutate(r: Rng, value: unknown): unknown {
  if (value === null || typeof value !== "object") return weirdValue(r);
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj);
  const op = r.int(6);
  if (op === 0 && keys.length) delete obj[r.pick(keys)];
  else if (op === 1 && keys.length) obj[r.pick(keys)] = weirdValue(r);
  else if (op === 2) {
    obj[r.pick([...WEIRD_STRINGS, "extra", "metadata", "provider_connection_id"])] = weirdValue(r);
  } else if (op === 3 && keys.length) {
    const k = r.pick(keys);
    obj[k] = mutate(r, obj[k]);
  } else if (op === 4 && keys.length) {
    const k = r.pick(keys);
    if (obj[k] !== null && typeof obj[k] === "object") obj[k] = mutate(r, obj[k]);
    else obj[k] = weirdValue(r);
  } else if (op === 5) {
    if ("provider_type" in obj) {
      obj.provider_type = r.pick([...PROVIDER_TYPES, "vendor9", "", "EXTERNAL_ENGINE"]);
    } else obj[r.pick(keys.length ? keys : ["x"])] = weirdValue(r);
  }
  return value;
}

/** A JSON body: a valid one, mutated, then maybe broken at the text level. */
function jsonBody(r: Rng, template: unknown): string | Uint8Array | "slow" | "flood" {
  const value = structuredClone(template);
  const rounds = r.chance(0.12) ? 0 : 1 + r.int(3);
  let v: unknown = value;
  for (let i = 0; i < rounds; i++) v = mutate(r, v);
  const text = JSON.stringify(v) ?? "null";
  if (!r.chance(0.25)) return text;
  switch (r.int(16)) {
    case 0:
      return text.slice(0, r.int(text.length));
    case 1:
      return "\ufeff" + text;
    case 2:
      return text.replace("{", '{"name":"a","name":');
    case 3:
      return text.replace("{", "{/*c*/");
    case 4:
      return text.replace(/\d+/, "NaN");
    case 5:
      return text.replace("{", '{"n":1e400,');
    case 6:
      return text.replace(/}$/, ",}");
    case 7:
      return "[".repeat(30_000) + "]".repeat(30_000);
    case 8:
      return '{"a":'.repeat(8000) + "1" + "}".repeat(8000);
    case 9:
      return new Uint8Array([0x7b, 0x22, 0x6e, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0xc3, 0x22, 0x7d]);
    case 10:
      return JSON.stringify({ pad: "p".repeat(70_000) });
    case 11:
      return r.pick(["", " ", "null", "[]", '"s"', "0", "true", "{}"]);
    case 12:
      return text.replaceAll('"', "'");
    case 13:
      return r.chance(0.5) ? "slow" : "flood";
    default:
      return text + r.pick(["x", "}", "\u0000", " garbage"]);
  }
}

/** A session id: known, unknown, malformed or too long. */
function sessionId(r: Rng, t: FuzzTarget): string {
  if (r.chance(0.3) && t.sessionIds.length) return r.pick(t.sessionIds);
  return r.pick([
    () => `session:${base62(r, 22)}`,
    () => `session:${"a".repeat(r.pick([254, 256, 300, 2100, 5000]))}`,
    () =>
      r.pick(["session:", "session", "sess_abc", "SESSION:abc", "session:ab%2Fcd", "session:%00", "%2e%2e"]),
    () => `session:${enc(r.pick(WEIRD_STRINGS))}`,
    () => enc(r.pick(WEIRD_STRINGS)) || "x",
    () => `session:${base62(r, 22)}/extra`,
  ])();
}

function keyId(r: Rng): string {
  return r.pick([
    () => `svc_key_${base62(r, 22)}`,
    () => `svc_key_${"a".repeat(r.pick([247, 248, 300, 4000]))}`,
    () => r.pick(["svc_key_", "svc_key", "key_abc", "svc_key_%00", "constructor"]),
    () => `svc_key_${enc(r.pick(WEIRD_STRINGS))}`,
  ])();
}

function query(r: Rng, pairs: [string, () => string][]): string {
  const parts = pairs.filter(() => r.chance(0.5)).map(([k, v]) => `${k}=${v()}`);
  if (r.chance(0.1)) parts.push(`${enc(r.pick(WEIRD_STRINGS))}=1`);
  return parts.length ? `?${parts.join("&")}` : "";
}

const qv = (r: Rng, good: string[]) => () =>
  r.chance(0.5) ? r.pick(good) : enc(String(r.pick([...WEIRD_STRINGS, -1, 0, 101, 1e9, 1.5])));

/** The routes, each with a request builder. */
function routes(t: FuzzTarget): ((r: Rng) => FuzzRequest)[] {
  const valid = validBodies(t);
  const json =
    (method: string, path: string, template: unknown, mayStart = false) => (r: Rng): FuzzRequest => ({
      method,
      path,
      headers: { "content-type": "application/json" },
      body: jsonBody(r, template),
      mayStartSession: mayStart,
    });
  const bare = (method: string, path: (r: Rng) => string) => (r: Rng): FuzzRequest => ({
    method,
    path: path(r),
    headers: {},
  });
  const sessionTemplate = (r: Rng) =>
    r.pick([valid.engine, valid.engine, valid.engine, valid.vendor1, valid.vendor2, valid.vendor3]);
  return [
    (r) => json("POST", "/v1/api-keys", valid.key)(r),
    bare("DELETE", (r) => `/v1/api-keys/${keyId(r)}`),
    bare(
      "GET",
      (r) =>
        `/v1/api-keys${
          query(r, [["limit", qv(r, ["1", "20", "100"])], ["starting_after", () => enc(keyId(r))]])
        }`,
    ),
    (r) => json("POST", "/v1/sessions", sessionTemplate(r), true)(r),
    (r) => json("POST", "/v1/sessions", sessionTemplate(r), true)(r),
    (r) => {
      const req = json("POST", "/v1/sessions", sessionTemplate(r), true)(r);
      req.headers["idempotency-key"] = r.pick([
        crypto.randomUUID(),
        "fuzz-fixed-1",
        "fuzz-fixed-2",
        "",
        " ",
        "a b",
        "x".repeat(256),
        "x".repeat(255),
      ]);
      return req;
    },
    bare("GET", (r) => `/v1/sessions/${sessionId(r, t)}`),
    bare(
      "POST",
      (r) => `/v1/sessions/${sessionId(r, t)}/end${query(r, [["force", qv(r, ["true", "false"])]])}`,
    ),
    bare("POST", (r) => `/v1/sessions/${sessionId(r, t)}/client-token`),
    bare("DELETE", (r) => `/v1/sessions/${sessionId(r, t)}`),
    bare("POST", (r) => `/v1/sessions/${sessionId(r, t)}/${r.pick(["start", "status", "ws-token", "sfu"])}`),
    bare("GET", () => "/v1/webhooks/secret"),
    bare("POST", () => "/v1/webhooks/secret/rotate"),
    bare("GET", () => "/v1/catalog"),
    bare(
      "GET",
      (r) => r.pick(["/openapi.json", "/docs", "/docs/errors", "/healthz", "/sdk/player.js", "/demo"]),
    ),
    bare("GET", (r) =>
      `/docs/assets/${
        r.pick([
          "swagger-ui.css",
          "swagger-ui-bundle.js",
          "init.js",
          "constructor",
          "toString",
          "hasOwnProperty",
          "__proto__",
          "valueOf",
          "..%2F..%2Fetc%2Fpasswd",
          "swagger-ui.css%00",
        ])
      }`),
    (r) => ({ method: "GET", path: "/demo/api/catalog", headers: demoHeaders(r) }),
    (r) => {
      const req = json("POST", "/demo/api/sessions", { avatar_id: "ada", bg_id: "studio" }, true)(r);
      return { ...req, headers: { ...req.headers, ...demoHeaders(r) } };
    },
    (r) => ({
      ...bare("POST", (r) => `/demo/api/sessions/${sessionId(r, t)}/token`)(r),
      headers: demoHeaders(r),
    }),
    (r) => ({
      ...bare("POST", (r) => `/demo/api/sessions/${sessionId(r, t)}/end`)(r),
      headers: demoHeaders(r),
    }),
    (r) => ({
      method: r.pick(["GET", "GET", "HEAD", "POST"]),
      path: `/media/v0/sessions/${sessionId(r, t)}${query(r, [["token", () => base62(r, 30)]])}`,
      headers: brokenHandshake(r),
    }),
    bare("GET", (r) =>
      r.pick([
        "/",
        "//v1/sessions",
        "/v1",
        "/v1/",
        "/V1/SESSIONS",
        "/v1/sessions/",
        "/v1/api-keys/",
        "/v2/sessions",
        "/v1/sessions?x=%ZZ",
        `/${"a".repeat(8000)}`,
        `/v1/${enc(r.pick(WEIRD_STRINGS))}`,
        "/.env",
        "/admin",
        "/%2e%2e/%2e%2e/etc/passwd",
      ])),
  ];
}

function demoHeaders(r: Rng): Record<string, string> {
  const h: Record<string, string> = {};
  if (r.chance(0.8)) h["x-demo"] = r.pick(["1", "1", "0", "true", ""]);
  if (r.chance(0.3)) h.origin = r.pick(["https://evil.example", "null", "http://127.0.0.1", "not a url"]);
  if (r.chance(0.3)) h["sec-fetch-site"] = r.pick(["same-origin", "cross-site", "same-site", "none"]);
  return h;
}

/** Upgrade-ish headers that never make a valid handshake (fetch cannot take a 101). */
function brokenHandshake(r: Rng): Record<string, string> {
  const h: Record<string, string> = {};
  if (r.chance(0.7)) h.upgrade = r.pick(["websocket", "WebSocket", "h2c", "websocket, foo", ""]);
  if (r.chance(0.6)) h.connection = r.pick(["upgrade", "keep-alive", "Upgrade, keep-alive"]);
  if (r.chance(0.4)) h["sec-websocket-version"] = r.pick(["13", "8", "x"]);
  if (r.chance(0.3)) h["sec-websocket-key"] = r.pick(["", "short", "not base64!!!!!!!!!!!!=="]);
  if (r.chance(0.3)) {
    h["sec-websocket-protocol"] = r.pick(["avatar-media.v0", "bearer.x, avatar-media.v0", ","]);
  }
  return h;
}

/** Adds authentication (mostly valid), content-type and header noise. */
function decorate(r: Rng, t: FuzzTarget, req: FuzzRequest): FuzzRequest {
  const headers = { ...req.headers };
  if (!req.path.startsWith("/demo/api/") || r.chance(0.1)) {
    const a = r.next();
    if (a < 0.62) headers.authorization = `Bearer ${t.keys.all}`;
    else if (a < 0.7) headers["x-api-key"] = t.keys.all;
    else if (a < 0.75) headers.authorization = `Bearer ${t.keys.readOnly}`;
    else if (a < 0.8) headers.authorization = `Bearer ${t.keys.other}`;
    else if (a < 0.83) headers.authorization = `Bearer ${t.keys.revoked}`;
    else if (a < 0.88) { /* none */ }
    else {
      headers.authorization = r.pick([
        "Bearer",
        "Bearer ",
        "Bearer  a b",
        "Basic dXNlcjpwYXNz",
        `Bearer ${t.keys.all}x`,
        `Bearer ${t.keys.all.slice(0, -1)}A`,
        `bearer\t${t.keys.all}`,
        `Bearer ${"A".repeat(8000)}`,
        `Bearer svc_sk_${"A".repeat(38)}`,
        "Bearer é",
      ]);
      if (r.chance(0.3)) headers["x-api-key"] = r.pick(["", " ", t.keys.other, "svc_sk_x"]);
    }
  }
  if (req.body !== undefined && r.chance(0.12)) {
    const ct = r.pick([
      null,
      "text/plain",
      "application/json; charset=utf-16",
      "application/json-patch+json",
      "multipart/form-data; boundary=x",
      "APPLICATION/JSON",
      "application/json;;",
      "application/x-www-form-urlencoded",
    ]);
    if (ct === null) delete headers["content-type"];
    else headers["content-type"] = ct;
  }
  if (r.chance(0.05)) {
    headers["x-request-id"] = r.pick(["client-chosen", "00000000-0000-0000-0000-000000000000"]);
  }
  if (r.chance(0.05)) headers[r.pick(["x-forwarded-for", "x-forwarded-host", "forwarded"])] = "127.0.0.1";
  if (r.chance(0.03)) headers["x-padding"] = "p".repeat(r.pick([1000, 8000]));
  let method = req.method;
  if (r.chance(0.08)) {
    method = r.pick([
      "GET",
      "POST",
      "PUT",
      "PATCH",
      "DELETE",
      "HEAD",
      "OPTIONS",
      "PROPFIND",
      "FOO",
      "get",
      "post",
      "Get",
      "delete",
      "TRACE",
      "trace",
      "TRACK",
    ]);
  }
  let body = req.body;
  if (body === undefined && r.chance(0.04)) body = r.pick(["{}", "x".repeat(70_000), "slow"]);
  // fetch cannot send a GET or HEAD body (odd methods go out raw, body and all)
  if ((method === "GET" || method === "HEAD") && body !== undefined) body = undefined;
  return { ...req, method, headers, body };
}

// ---------------------------------------------------------------------------------------------- checks

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const PROVIDER_VALUE = new RegExp(PROVIDER_TYPES.join("|"));
/** 5xx codes a session start may answer when the engine (or a provider type not run here) refuses it. */
const UPSTREAM_CODES = new Set([
  "SVC_PROVIDER_UNAVAILABLE",
  "SVC_PROVIDER_DOWNSTREAM_FAILED",
  "SVC_PROVIDER_TIMEOUT",
  "SVC_RENDER_CAPACITY",
  "SVC_RENDER_FAILED",
  "SVC_RENDER_TIMEOUT",
]);

/**
 * Deno's HTTP server answers an upgrade request that carries a body, whatever its method, with a bare 400 (no
 * handler runs). fetch gives every POST and PUT a body (`Content-Length: 0` at least); the raw sender gives one
 * to any request whose `body` is set.
 */
export function isServerRefusal(
  req: Pick<FuzzRequest, "method" | "headers" | "body">,
  res: { status: number; headers: Headers; text: string },
): boolean {
  const header = (name: string) =>
    Object.entries(req.headers).find(([k]) => k.toLowerCase() === name)?.[1]?.toLowerCase();
  const hasBody = req.body !== undefined || req.method === "POST" || req.method === "PUT";
  return hasBody && header("upgrade") !== undefined &&
    (header("connection") ?? "").split(",").some((t) => t.trim() === "upgrade") && res.status === 400 &&
    res.text === "" && !res.headers.has("x-request-id");
}

/** What is wrong with an answer, or null. */
export function checkAnswer(
  req: Pick<FuzzRequest, "method" | "path">,
  res: { status: number; headers: Headers; text: string },
): string | null {
  const requestId = res.headers.get("x-request-id");
  if (!requestId || !UUID.test(requestId)) return "no X-Request-Id";
  const apiRoute = req.path.startsWith("/v1/") || req.path.startsWith("/demo/api/");
  if (res.status < 400) {
    if (apiRoute && res.headers.get("cache-control") !== "no-store") return "success without no-store";
    return null;
  }
  if (res.headers.get("cache-control") !== "no-store") return "error without no-store";
  if (req.method === "HEAD") return res.text === "" ? null : "HEAD answer with a body";
  let b: Record<string, unknown>;
  try {
    b = JSON.parse(res.text);
  } catch {
    return "error body is not JSON";
  }
  if (b === null || typeof b !== "object" || Array.isArray(b)) return "error body is not an object";
  const code = b.code;
  if (typeof code !== "string" || !Object.hasOwn(ERROR_CATALOG, code)) return "unknown code";
  const spec = ERROR_CATALOG[code as keyof typeof ERROR_CATALOG];
  if (spec.status !== res.status) return `status ${res.status} is not ${code}'s`;
  if (typeof b.message !== "string" || b.message.length === 0) return "empty message";
  if (PROVIDER_VALUE.test(b.message)) return "message names a provider type";
  if (b.request_id !== requestId) return "request_id differs from X-Request-Id";
  if (typeof b.doc_url !== "string" || !/^https:\/\/\S+$/.test(b.doc_url)) return "doc_url is not https";
  const expected = spec.retryable
    ? ["code", "doc_url", "message", "request_id", "retry_after"]
    : ["code", "doc_url", "message", "request_id"];
  if (Object.keys(b).sort().join() !== expected.join()) return `fields ${Object.keys(b).sort().join()}`;
  if (spec.retryable) {
    const ra = b.retry_after;
    if (!Number.isInteger(ra) || (ra as number) < 1 || (ra as number) > 3600) return "bad retry_after";
    if (res.headers.get("retry-after") !== String(ra)) return "Retry-After header differs";
  } else if (res.headers.has("retry-after")) return "Retry-After on a non-retryable code";
  return null;
}

// ---------------------------------------------------------------------------------------------- runner

/** An answer as the campaign checks it. */
export interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

const UTF8 = new TextEncoder();

/** The methods the service's routes serve (any other answers 405 or 404). */
const SERVED_METHODS = new Set(["GET", "HEAD", "POST", "DELETE"]);

/** Whether fetch sends `method` as it is (it upper-cases `get`/`post`/… and refuses TRACE, TRACK, CONNECT). */
const fetchSends = (method: string) =>
  /^[A-Z]+$/.test(method) && !["TRACE", "TRACK", "CONNECT"].includes(method);

/** Sends one request; returns its answer. */
export async function send(base: string, req: FuzzRequest): Promise<Answer> {
  if (req.body === "slow" || req.body === "flood") return await sendStreamed(base, req, req.body);
  if (!fetchSends(req.method)) return await sendRaw(base, req);
  const res = await fetch(base + req.path, {
    method: req.method,
    headers: req.headers,
    body: req.body as BodyInit | undefined,
    redirect: "manual",
    signal: AbortSignal.timeout(60_000),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/**
 * Sends a body that stops arriving (`slow`: a few bytes of a declared 100) or a chunked 300 MiB one
 * (`flood`) over a raw TCP connection, reads the answer and closes the connection: an upload the server
 * stopped reading would otherwise stay blocked inside fetch until the server closed the connection.
 */
async function sendStreamed(base: string, req: FuzzRequest, kind: "slow" | "flood"): Promise<Answer> {
  const url = new URL(base);
  const conn = await Deno.connect({ hostname: url.hostname, port: Number(url.port) });
  const head = [`${req.method} ${req.path} HTTP/1.1`, `Host: ${url.host}`];
  for (const [k, v] of Object.entries(req.headers)) head.push(`${k}: ${v}`);
  head.push(kind === "slow" ? "Content-Length: 100" : "Transfer-Encoding: chunked");
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    clearTimeout(timer);
    try {
      conn.close();
    } catch { /* already closed */ }
  };
  const timer = setTimeout(close, 60_000);
  const upload = (async () => {
    await conn.write(UTF8.encode(head.join("\r\n") + "\r\n\r\n"));
    if (kind === "slow") {
      await conn.write(UTF8.encode('{"name":"slo'));
      return;
    }
    const chunk = new Uint8Array((1 << 20) + 12).fill(0x20);
    chunk.set(UTF8.encode("100000\r\n"));
    chunk.set(UTF8.encode("\r\n"), chunk.length - 2);
    for (let i = 0; i < 300 && !closed; i++) await conn.write(chunk);
    if (!closed) await conn.write(UTF8.encode("0\r\n\r\n"));
  })().catch(() => {}); // a write blocked on a full socket fails when the connection closes
  try {
    return await readAnswer(conn);
  } finally {
    close();
    await upload;
  }
}

/** Sends a request over a raw connection, the method exactly as given (with its body, if any). */
async function sendRaw(base: string, req: FuzzRequest): Promise<Answer> {
  const url = new URL(base);
  const conn = await Deno.connect({ hostname: url.hostname, port: Number(url.port) });
  const timer = setTimeout(() => conn.close(), 60_000);
  try {
    const body = typeof req.body === "string" ? UTF8.encode(req.body) : req.body as Uint8Array | undefined;
    const head = [`${req.method} ${req.path} HTTP/1.1`, `Host: ${url.host}`, "Connection: close"];
    for (const [k, v] of Object.entries(req.headers)) head.push(`${k}: ${v}`);
    if (body) head.push(`Content-Length: ${body.length}`);
    await conn.write(UTF8.encode(head.join("\r\n") + "\r\n\r\n"));
    if (body) await conn.write(body).catch(() => 0); // the answer may come before the whole body
    return await readAnswer(conn);
  } finally {
    clearTimeout(timer);
    try {
      conn.close();
    } catch { /* closed */ }
  }
}

/** Reads one HTTP/1.1 answer with a Content-Length (every answer of the service has one). */
async function readAnswer(conn: Deno.Conn): Promise<Answer> {
  let buf = new Uint8Array(0);
  const more = async () => {
    const chunk = new Uint8Array(64 * 1024);
    const n = await conn.read(chunk);
    if (n === null) throw new Error("connection closed before a complete answer");
    const next = new Uint8Array(buf.length + n);
    next.set(buf);
    next.set(chunk.subarray(0, n), buf.length);
    buf = next;
  };
  const headEnd = () => {
    for (let i = 0; i + 3 < buf.length; i++) {
      if (buf[i] === 13 && buf[i + 1] === 10 && buf[i + 2] === 13 && buf[i + 3] === 10) return i;
    }
    return -1;
  };
  let end: number;
  while ((end = headEnd()) === -1) await more();
  const dec = new TextDecoder();
  const lines = dec.decode(buf.subarray(0, end)).split("\r\n");
  const status = Number(lines[0].split(" ")[1]);
  const headers = new Headers();
  for (const line of lines.slice(1)) {
    const at = line.indexOf(":");
    headers.append(line.slice(0, at).trim(), line.slice(at + 1).trim());
  }
  const length = Number(headers.get("content-length") ?? 0);
  while (buf.length < end + 4 + length) await more();
  return { status, headers, text: dec.decode(buf.subarray(end + 4, end + 4 + length)) };
}

/** Runs the campaign against `t`. */
export async function runFuzz(t: FuzzTarget, options: FuzzOptions): Promise<FuzzReport> {
  const started = performance.now();
  const deadline = started + options.seconds * 1000;
  const logsBefore = t.logs.length;
  const report: FuzzReport = {
    seed: options.seed,
    requests: 0,
    not_sent: 0,
    by_status: {},
    five_xx: 0,
    five_xx_by_code: {},
    unexpected_five_xx: 0,
    malformed_error_bodies: 0,
    bad_success_headers: 0,
    transport_errors: 0,
    server_refusals: 0,
    bad_method_answers: 0,
    websockets: { tried: 0, opened: 0, close_codes: {}, unexpected: 0 },
    error_log_lines: 0,
    samples: [],
    seconds: 0,
    stopped_by_time: false,
  };
  const sample = (s: string) => {
    if (report.samples.length < 60) report.samples.push(s.slice(0, 400));
  };

  await runWebSockets(t, options, deadline, report, sample);

  const r = rng(options.seed);
  const builders = routes(t);
  const plan: FuzzRequest[] = [];
  for (let i = 0; i < options.count; i++) plan.push(decorate(r, t, r.pick(builders)(r)));
  let next = 0;
  const worker = async () => {
    while (next < plan.length) {
      if (performance.now() > deadline) {
        report.stopped_by_time = true;
        return;
      }
      const req = plan[next++];
      let res: Answer;
      try {
        res = await send(t.base, req);
      } catch (err) {
        if (err instanceof TypeError && /header|method|Invalid/i.test(err.message)) {
          report.not_sent++;
        } else {
          report.transport_errors++;
          sample(`transport ${req.method} ${req.path.slice(0, 80)}: ${err}`);
        }
        continue;
      }
      report.requests++;
      report.by_status[res.status] = (report.by_status[res.status] ?? 0) + 1;
      if (isServerRefusal(req, res)) {
        report.server_refusals++;
        continue;
      }
      const where = `${req.method} ${req.path.slice(0, 100)} → ${res.status} ${res.text.slice(0, 200)}`;
      if (!SERVED_METHODS.has(req.method) && res.status !== 405 && res.status !== 404) {
        report.bad_method_answers++;
        sample(`method: ${where}`);
      }
      if (res.status >= 500) {
        report.five_xx++;
        let code = "(no code)";
        try {
          code = JSON.parse(res.text).code ?? code;
        } catch { /* counted as malformed below */ }
        report.five_xx_by_code[code] = (report.five_xx_by_code[code] ?? 0) + 1;
        if (!(req.mayStartSession && UPSTREAM_CODES.has(code))) {
          report.unexpected_five_xx++;
          sample(`5xx ${where}`);
        }
      }
      const problem = checkAnswer(req, res);
      if (problem) {
        if (res.status >= 400) report.malformed_error_bodies++;
        else report.bad_success_headers++;
        sample(`${problem}: ${where}`);
      }
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  const errors = t.logs.slice(logsBefore).filter((l) => l.includes('"level":"error"'));
  report.error_log_lines = errors.length;
  for (const l of errors.slice(0, 5)) sample(`log: ${l}`);
  report.seconds = Math.round((performance.now() - started) / 100) / 10;
  return report;
}

/** Media WebSocket connections with valid, forged, expired and misdirected tokens. */
async function runWebSockets(
  t: FuzzTarget,
  options: FuzzOptions,
  deadline: number,
  report: FuzzReport,
  sample: (s: string) => void,
): Promise<void> {
  const r = rng(options.seed ^ 0x5eed);
  const now = new OffsetClock();
  const tokens = new TokenService({ current: SECRET, previous: null }, now);
  const past = new OffsetClock();
  past.advance(-10 * 60_000);
  const expired = new TokenService({ current: SECRET, previous: null }, past);
  const forger = new TokenService(
    { current: "another-secret-0123456789abcdef0123456789", previous: null },
    now,
  );
  const b64 = (o: unknown) =>
    btoa(JSON.stringify(o)).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
  const live = t.sessionIds[0];
  const wsBase = t.base.replace(/^http/, "ws");
  for (let i = 0; i < options.websockets && performance.now() < deadline; i++) {
    // Ids that keep the path on the media route (a path off it is simply 404 before any upgrade).
    const id = r.chance(0.6) ? live : r.pick([
      `session:${base62(r, 22)}`,
      `session:${"a".repeat(300)}`,
      "session:",
      "sess_abc",
      "session:%00",
    ]);
    const iat = Math.floor(Date.now() / 1000);
    const token = await r.pick([
      async () => (await tokens.mint(id, "proj_fuzz", r.pick(["client", "media"] as const))).token,
      async () => (await tokens.mint(live, "proj_other", "client")).token,
      async () => (await tokens.mint(`session:${base62(r, 22)}`, "proj_fuzz", "client")).token,
      async () => (await expired.mint(id, "proj_fuzz", "client")).token,
      async () => (await forger.mint(id, "proj_fuzz", "client")).token,
      async () =>
        await sign(
          { iss: "svc", sub: id, pid: "proj_fuzz", pur: "admin", iat, exp: iat + 300 },
          SECRET,
          "HS256",
        ),
      async () =>
        await sign(
          { iss: "svc", sub: id, pid: "proj_fuzz", pur: "client", iat, exp: iat + 300 },
          SECRET,
          "HS512",
        ),
      () =>
        Promise.resolve(
          `${b64({ alg: "none", typ: "JWT" })}.${b64({ iss: "svc", sub: id, pid: "proj_fuzz" })}.`,
        ),
      () => Promise.resolve(r.pick(["", "x", "a.b.c", "A".repeat(8000), t.keys.all])),
    ])();
    const viaQuery = r.chance(0.3);
    const url = `${wsBase}/media/v0/sessions/${id}${viaQuery ? `?token=${enc(token)}` : ""}`;
    const protocols = viaQuery || !token ? ["avatar-media.v0"] : ["avatar-media.v0", `bearer.${token}`];
    let ws: WebSocket;
    try {
      ws = new WebSocket(url, protocols);
    } catch {
      continue; // the client refuses to form it (e.g. an invalid subprotocol)
    }
    report.websockets.tried++;
    const outcome = await new Promise<{ opened: boolean; code: number }>((resolve) => {
      let opened = false;
      const timer = setTimeout(() => ws.close(1000), 10_000);
      ws.onopen = () => {
        opened = true;
      };
      ws.onmessage = () => {
        if (ws.readyState === WebSocket.OPEN) ws.close(1000);
      };
      ws.onclose = (e) => {
        clearTimeout(timer);
        resolve({ opened, code: e.code });
      };
      ws.onerror = () => {};
    });
    if (outcome.opened) report.websockets.opened++;
    report.websockets.close_codes[outcome.code] = (report.websockets.close_codes[outcome.code] ?? 0) + 1;
    if (![1000, 4401, 4403, 4404, 4429].includes(outcome.code)) {
      report.websockets.unexpected++;
      sample(`websocket ${url.slice(0, 120)} closed ${outcome.code}`);
    }
  }
}
