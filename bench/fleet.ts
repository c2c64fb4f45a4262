/**
 * Fleet part of `deno task bench:api --fleet`: several service processes on one KV file (SQLite), as
 * several API instances of one deployment.
 *
 * 1. **Shared rate budget**: one key driven far above its rate (8 request loops) through 1 and through 3
 *    instances, with the load spread evenly, all on one instance, and split 2:1:0; admitted requests
 *    compared with what the policy allows over the run (burst + rate × duration).
 * 2. **Revocation**: two instances; one is asked continuously with a key while the other revokes it; the
 *    time from the revocation's answer to the first refusal by the other.
 * 3. **Staleness of GET across instances**: a session runs on A; B reads it continuously while A ends it;
 *    the time from A's end answer to B's first read showing it ended.
 *
 * @module
 */
import { createApiKey } from "../src/kv/api_keys.ts";
import { generateEngineTls } from "../engine/mod.ts";
import { startBenchEngine } from "./engine.ts";
import { type ServiceProcess, startServiceProcess } from "../testing/service_process.ts";

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

const PROJECT = "proj_fleet";
const UNKNOWN = "session:AAAAAAAAAAAAAAAAAAAAAA";

async function call(base: string, method: string, path: string, key: string, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : {} };
}

async function withFleet<T>(
  n: number,
  env: Record<string, string>,
  fn: (procs: ServiceProcess[], key: () => Promise<{ plaintext: string; keyId: string }>) => Promise<T>,
): Promise<T> {
  const dir = await Deno.makeTempDir({ prefix: "bench_fleet_" });
  const kv = await Deno.openKv(`${dir}/svc.kv`);
  const procs = await Promise.all(Array.from({ length: n }, () =>
    startServiceProcess({
      SVC_KV: `${dir}/svc.kv`,
      SVC_MEDIA_ENABLED: "false",
      SVC_DEMO_PAGE: "false",
      SVC_SESSION_JOIN_WINDOW_S: "3600",
      SVC_SESSION_IDLE_TIMEOUT_S: "3600",
      ...env,
    })));
  try {
    return await fn(procs, async () => {
      const { plaintext, record } = await createApiKey(kv, {
        projectId: PROJECT,
        name: "fleet",
        scopes: ["sessions:read", "sessions:write", "api_keys:read", "api_keys:write"],
        now: Date.now(),
        createdBy: "bench",
      });
      return { plaintext, keyId: record.key_id };
    });
  } finally {
    for (const p of procs) p.kill("SIGTERM");
    await Promise.all(procs.map((p) => p.exited()));
    kv.close();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/** One rate-budget measurement. */
export interface RateRow {
  instances: number;
  load: string;
  seconds: number;
  offered_per_s: number;
  admitted: number;
  allowed: number;
  /** admitted / allowed. */
  ratio: number;
  /** Admitted from 2 s on / (rate × the rest of the run): the sustained rate once shares have settled. */
  sustained_ratio: number;
}

async function driveRate(
  urls: string[],
  weights: number[],
  key: string,
  seconds: number,
): Promise<{ admitted: number; total: number; elapsedS: number; admittedAfter2s: number }> {
  // 8 loops, assigned to instances in proportion to `weights`.
  const loops: string[] = [];
  const sum = weights.reduce((a, b) => a + b, 0);
  for (const [i, w] of weights.entries()) {
    for (let k = 0; k < Math.round(8 * w / sum); k++) loops.push(urls[i]);
  }
  let admitted = 0, total = 0, admittedAfter2s = 0;
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  await Promise.all(loops.map(async (url) => {
    while (performance.now() < end) {
      const { status } = await call(url, "GET", `/v1/sessions/${UNKNOWN}`, key);
      total++;
      if (status === 404) {
        admitted++;
        if (performance.now() - t0 >= 2000) admittedAfter2s++;
      } else if (status !== 429) throw new Error(`unexpected status ${status}`);
    }
  }));
  return { admitted, total, elapsedS: (performance.now() - t0) / 1000, admittedAfter2s };
}

/** Part 1: the fleet's admissions against the configured rate. */
export async function runRateBench(seconds: number): Promise<RateRow[]> {
  const perMinute = 600, burst = 60; // the defaults
  const rows: RateRow[] = [];
  const loads: Record<number, [string, number[]][]> = {
    1: [["all on one", [1]]],
    3: [["even", [1, 1, 1]], ["all on one", [1, 0, 0]], ["2:1:0", [2, 1, 0]]],
  };
  for (const n of [1, 3]) {
    await withFleet(n, {}, async (procs, newKey) => {
      for (const [load, weights] of loads[n]) {
        const { plaintext } = await newKey();
        const r = await driveRate(procs.map((p) => p.url), weights, plaintext, seconds);
        const allowed = burst + perMinute / 60 * r.elapsedS;
        rows.push({
          instances: n,
          load,
          seconds: Math.round(r.elapsedS * 10) / 10,
          offered_per_s: Math.round(r.total / r.elapsedS),
          admitted: r.admitted,
          allowed: Math.round(allowed),
          ratio: Math.round(r.admitted / allowed * 1000) / 1000,
          sustained_ratio: Math.round(r.admittedAfter2s / (perMinute / 60 * (r.elapsedS - 2)) * 1000) / 1000,
        });
      }
    });
  }
  return rows;
}

/** Parts 2 and 3: revocation propagation and GET staleness across two instances, `runs` times each. */
export async function runCoherenceBench(runs: number): Promise<Record<string, unknown>[]> {
  const dir = await Deno.makeTempDir({ prefix: "bench_fleet_tls_" });
  const tls = await generateEngineTls();
  await Deno.writeTextFile(`${dir}/ca.pem`, tls.caPem);
  const engine = startBenchEngine(tls);
  try {
    return await withFleet(
      2,
      { SVC_RATE_LIMIT_PER_MINUTE: "0", SVC_ENGINE_CA_FILE: `${dir}/ca.pem` },
      async (procs, newKey) => {
        const [a, b] = procs;
        const revocation: number[] = [];
        for (let i = 0; i < runs; i++) {
          const { plaintext, keyId } = await newKey();
          let refusedAt = 0;
          let revokedAt = Infinity;
          const hammer = (async () => {
            while (!refusedAt) {
              const { status } = await call(b.url, "GET", `/v1/sessions/${UNKNOWN}`, plaintext);
              if (status === 401 && performance.now() > revokedAt) refusedAt = performance.now();
            }
          })();
          await new Promise((r) => setTimeout(r, 100));
          await call(a.url, "DELETE", `/v1/api-keys/${keyId}`, plaintext);
          revokedAt = performance.now();
          await hammer;
          revocation.push(refusedAt - revokedAt);
        }
        const staleness: number[] = [];
        const { plaintext: key } = await newKey();
        const body = {
          provider_type: "external_engine",
          provider_config: {
            external_engine: { url: engine.url, auth_headers: { Authorization: "Bearer x" } },
          },
        };
        for (let i = 0; i < runs; i++) {
          const created = await call(a.url, "POST", "/v1/sessions", key, body);
          if (created.status !== 200) throw new Error(`create: ${JSON.stringify(created.body)}`);
          const sid = created.body.session_id;
          let endedAt = Infinity;
          let seenAt = 0;
          const reader = (async () => {
            while (!seenAt) {
              const got = await call(b.url, "GET", `/v1/sessions/${sid}`, key);
              if (got.body.status === "ended" && performance.now() > endedAt) seenAt = performance.now();
            }
          })();
          await new Promise((r) => setTimeout(r, 100));
          await call(a.url, "POST", `/v1/sessions/${sid}/end?force=true`, key);
          endedAt = performance.now();
          await reader;
          staleness.push(seenAt - endedAt);
        }
        const row = (what: string, xs: number[]) => {
          const s = [...xs].sort((x, y) => x - y);
          const r = (x: number) => Math.round(x * 10) / 10;
          return { measure: what, runs: s.length, p50_ms: r(percentile(s, 50)), max_ms: r(s.at(-1)!) };
        };
        return [
          row("revoked key: revoke answered on A → first 401 on B", revocation),
          row("GET across instances: end answered on A → B shows ended", staleness),
        ];
      },
    );
  } finally {
    await engine.close();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
