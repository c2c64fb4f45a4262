/**
 * Control-plane benchmark: request latency of the canonical endpoints against a real service on
 * loopback (HTTP, KV file, in-process reference engine), measured from a client in the same process.
 *
 * Two passes: without the media plane (the API and the engine handshake alone), then with it (a create also
 * starts the session's renderer and encoders and waits for its first frame).
 *
 * Run: `deno task bench:api [--sessions 20] [--gets 2000]`
 *
 * @module
 */
import { parseArgs } from "node:util";
import { loadConfig } from "../src/config.ts";
import { silentLogger } from "../src/log.ts";
import { compose as startService, openKv } from "../src/app/compose.ts";
import { createApiKey } from "../src/kv/api_keys.ts";

/** Percentile of sorted numbers. */
export function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** Summary row of one measured operation. */
export interface Row {
  operation: string;
  n: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
}

function summarise(operation: string, samples: number[]): Row {
  const s = [...samples].sort((a, b) => a - b);
  const r = (x: number) => Math.round(x * 100) / 100;
  return {
    operation,
    n: s.length,
    p50_ms: r(percentile(s, 50)),
    p99_ms: r(percentile(s, 99)),
    max_ms: r(s.at(-1)!),
  };
}

/** Runs the benchmark and returns its rows. */
export async function runControlPlaneBench(
  options: { sessions: number; gets: number; media: boolean },
): Promise<Row[]> {
  const dir = await Deno.makeTempDir();
  const config = loadConfig({
    PORT: "0",
    SVC_KV: `${dir}/svc.kv`,
    SVC_REFERENCE_ENGINE_PORT: "0",
    SVC_REFERENCE_ENGINE_DIR: `${dir}/engine`,
    SVC_RATE_LIMIT_PER_MINUTE: "1000000",
    SVC_RATE_LIMIT_BURST: "100000",
    SVC_MAX_CONCURRENT_SESSIONS: String(options.sessions + 10),
    SVC_MEDIA_ENABLED: String(options.media),
    SVC_RENDER_CAPACITY: String(options.sessions + 10),
    SVC_DEMO_PAGE: "false",
  });
  const service = await startService(config, { logger: silentLogger });
  const kv = await openKv(config.kv);
  try {
    const { plaintext: key } = await createApiKey(kv, {
      projectId: "bench",
      name: "bench",
      scopes: ["sessions:read", "sessions:write", "api_keys:read", "api_keys:write"],
      now: Date.now(),
      createdBy: "bootstrap",
    });
    const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
    const engine = service.referenceEngine!;
    const body = JSON.stringify({
      provider_type: "external_engine",
      provider_config: {
        external_engine: { url: engine.url, auth_headers: { Authorization: `Bearer ${engine.token}` } },
      },
    });
    const time = async (fn: () => Promise<Response>, expect = 200) => {
      const t0 = performance.now();
      const res = await fn();
      await res.body?.cancel();
      if (res.status !== expect) throw new Error(`unexpected status ${res.status}`);
      return performance.now() - t0;
    };
    const create: number[] = [],
      get: number[] = [],
      token: number[] = [],
      end: number[] = [],
      unauth: number[] = [];
    const ids: string[] = [];
    for (let i = 0; i < options.sessions; i++) {
      const t0 = performance.now();
      const res = await fetch(`${service.url}/v1/sessions`, { method: "POST", headers, body });
      const json = await res.json();
      if (res.status !== 200) throw new Error(`create: ${res.status} ${JSON.stringify(json)}`);
      create.push(performance.now() - t0);
      ids.push(json.session_id);
    }
    for (let i = 0; i < options.gets; i++) {
      const id = ids[i % ids.length];
      get.push(await time(() => fetch(`${service.url}/v1/sessions/${id}`, { headers })));
    }
    for (let i = 0; i < Math.min(options.gets, 500); i++) {
      unauth.push(await time(() => fetch(`${service.url}/v1/sessions/${ids[0]}`), 401));
    }
    for (const id of ids) {
      token.push(
        await time(() => fetch(`${service.url}/v1/sessions/${id}/client-token`, { method: "POST", headers })),
      );
    }
    for (const id of ids) {
      end.push(await time(() => fetch(`${service.url}/v1/sessions/${id}/end`, { method: "POST", headers })));
    }
    const label = options.media ? "with media plane" : "API only";
    return [
      summarise(`POST /v1/sessions, ${label} (engine handshake over wss included)`, create),
      summarise(`GET /v1/sessions/{id}, ${label}`, get),
      summarise(`GET without a key (401), ${label}`, unauth),
      summarise(`POST …/client-token, ${label}`, token),
      summarise(`POST …/end (graceful), ${label}`, end),
    ];
  } finally {
    kv.close();
    await service.close();
    await Deno.remove(dir, { recursive: true });
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: { sessions: { type: "string", default: "20" }, gets: { type: "string", default: "2000" } },
  });
  const base = { sessions: Number(values.sessions), gets: Number(values.gets) };
  const rows = [
    ...await runControlPlaneBench({ ...base, media: false }),
    ...await runControlPlaneBench({ ...base, media: true }),
  ];
  console.table(rows);
}
