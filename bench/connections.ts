/**
 * `deno task bench:connections`: what happens to idle and slow clients, measured against a real service on
 * loopback. It opens `--each` connections of four kinds and watches them for `--seconds`:
 *
 * - idle: connects and sends nothing;
 * - slow header: sends half a request head and stops;
 * - keep-alive: one complete request, then nothing;
 * - slow body: a request head declaring 100 bytes, then 12 of them.
 *
 * It reports how many of each the server closed and when, and what the slow bodies were answered (the
 * service answers `408 SVC_REQUEST_TIMEOUT` at `SVC_BODY_TIMEOUT_S`). With Deno 2.9 the server closes none
 * of them: docs/configuration.md#connections names the reverse-proxy settings that do.
 *
 * Run: `deno task bench:connections [--each 50] [--seconds 60] [--body-timeout 5]`
 *
 * @module
 */
import { parseArgs } from "node:util";
import { compose, openKv } from "../src/app/compose.ts";
import { createApiKey } from "../src/kv/api_keys.ts";
import { loadConfig } from "../src/config.ts";
import { silentLogger } from "../src/log.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    each: { type: "string", default: "50" },
    seconds: { type: "string", default: "60" },
    "body-timeout": { type: "string", default: "5" },
  },
});
const each = Number(values.each);
const seconds = Number(values.seconds);

const dir = await Deno.makeTempDir({ prefix: "svc_conn_" });
// A key, so that the slow body reaches a route that reads it (minted before the service opens the file).
const kv = await openKv(`${dir}/svc.kv`);
const { plaintext: key } = await createApiKey(kv, {
  projectId: "proj_conn",
  name: "bench",
  scopes: ["api_keys:write"],
  now: Date.now(),
  createdBy: "bootstrap",
});
kv.close();
const config = loadConfig({
  PORT: "0",
  SVC_KV: `${dir}/svc.kv`,
  SVC_REFERENCE_ENGINE: "false",
  SVC_MEDIA_ENABLED: "false",
  SVC_BODY_TIMEOUT_S: String(values["body-timeout"]),
  SVC_RATE_LIMIT_PER_MINUTE: "1000000",
  SVC_RATE_LIMIT_BURST: "100000",
});
const service = await compose(config, { logger: silentLogger });
const port = Number(new URL(service.url!).port);
const enc = new TextEncoder();
const kinds: Record<string, string> = {
  idle: "",
  "slow header": "GET /healthz HTTP/1.1\r\nHost: x\r\n",
  "keep-alive": "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
  "slow body":
    `POST /v1/api-keys HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
    'Content-Length: 100\r\n\r\n{"name":"slo',
};
const started = performance.now();
const results: Record<string, { closed: number; closed_after_s: number[]; answers: Record<string, number> }> =
  {};

async function watch(kind: string): Promise<void> {
  const r = results[kind] ??= { closed: 0, closed_after_s: [], answers: {} };
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  if (kinds[kind]) await conn.write(enc.encode(kinds[kind]));
  const timer = setTimeout(() => conn.close(), seconds * 1000);
  const buf = new Uint8Array(16 * 1024);
  try {
    for (;;) {
      const n = await conn.read(buf);
      if (n === null) {
        r.closed++;
        r.closed_after_s.push(Math.round((performance.now() - started) / 100) / 10);
        break;
      }
      const status = /^HTTP\/1\.1 (\d{3})/.exec(new TextDecoder().decode(buf.subarray(0, n)))?.[1];
      if (status) r.answers[status] = (r.answers[status] ?? 0) + 1;
    }
  } catch {
    // closed by our own timer: still open at the end of the observation
  } finally {
    clearTimeout(timer);
    try {
      conn.close();
    } catch { /* already closed */ }
  }
}

try {
  await Promise.all(Object.keys(kinds).flatMap((kind) => Array.from({ length: each }, () => watch(kind))));
} finally {
  await service.dispose();
  await Deno.remove(dir, { recursive: true });
}
console.log(JSON.stringify(
  {
    deno: Deno.version.deno,
    each,
    observed_s: seconds,
    body_timeout_s: Number(values["body-timeout"]),
    kinds: Object.fromEntries(
      Object.entries(results).map(([k, r]) => [k, {
        closed_by_server: r.closed,
        still_open: each - r.closed,
        answers: r.answers,
        first_close_s: r.closed_after_s.sort((a, b) => a - b)[0] ?? null,
      }]),
    ),
  },
  null,
  2,
));
