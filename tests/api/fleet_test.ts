/**
 * Several API processes on one KV (a local SQLite file): keys and limits from memory stay coherent across
 * them. A revoked key stops working on every process within 1 s, a new key works at once on any, each key's
 * rate budget is shared by the live API processes, and a process that ended a session never shows it
 * active afterwards.
 */
import assert from "node:assert/strict";
import { createApiKey } from "../../src/kv/api_keys.ts";
import { startFakeEngine } from "../../testing/fake_engine.ts";
import { engineBody, testTls } from "../../testing/fixtures.ts";
import { type ServiceProcess, startServiceProcess } from "../../testing/service_process.ts";

const PROJECT = "proj_fleet";
const UNKNOWN = "session:AAAAAAAAAAAAAAAAAAAAAA";

interface Fleet {
  dir: string;
  kv: Deno.Kv;
  procs: ServiceProcess[];
  key(scopes?: string[]): Promise<{ plaintext: string; keyId: string }>;
  close(): Promise<void>;
}

async function startFleet(n: number, env: Record<string, string> = {}): Promise<Fleet> {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(`${dir}/ca.pem`, testTls.caPem);
  const kv = await Deno.openKv(`${dir}/svc.kv`);
  const procs: ServiceProcess[] = [];
  const close = async () => {
    for (const p of procs) p.kill("SIGTERM");
    await Promise.all(procs.map((p) => p.exited()));
    kv.close();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  try {
    const started = await Promise.all(Array.from({ length: n }, () =>
      startServiceProcess({
        SVC_KV: `${dir}/svc.kv`,
        SVC_ENGINE_CA_FILE: `${dir}/ca.pem`,
        SVC_MEDIA_ENABLED: "false",
        SVC_DEMO_PAGE: "false",
        ...env,
      })));
    procs.push(...started);
  } catch (err) {
    await close();
    throw err;
  }
  return {
    dir,
    kv,
    procs,
    async key(scopes = ["sessions:read", "sessions:write", "api_keys:read", "api_keys:write"]) {
      const { plaintext, record } = await createApiKey(kv, {
        projectId: PROJECT,
        name: "fleet",
        scopes: scopes as never,
        now: Date.now(),
        createdBy: "bootstrap",
      });
      return { plaintext, keyId: record.key_id };
    },
    close,
  };
}

async function call(
  base: string,
  method: string,
  path: string,
  key?: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const headers: Record<string, string> = {};
  if (key) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(`${base}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000), // a process that stops answering fails the test, never hangs it
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : {} };
}

Deno.test("fleet: a new key works at once on every process; a revoked one stops within 1 s on every process", async () => {
  const fleet = await startFleet(2, { SVC_RATE_LIMIT_PER_MINUTE: "0" });
  const [a, b] = fleet.procs;
  try {
    const { plaintext: key, keyId } = await fleet.key();
    for (const p of fleet.procs) assert.equal((await call(p.url, "GET", "/v1/api-keys", key)).status, 200);

    // B answers from memory while A revokes; B is asked continuously, each request timed.
    const seen: { sentAt: number; status: number }[] = [];
    let stop = false;
    const hammerEnd = performance.now() + 60_000; // bounded even if the test fails before it stops
    const hammer = (async () => {
      while (!stop && performance.now() < hammerEnd) {
        const sentAt = performance.now();
        seen.push({ sentAt, status: (await call(b.url, "GET", `/v1/sessions/${UNKNOWN}`, key)).status });
      }
    })();
    const stopHammer = async () => {
      stop = true;
      await hammer;
    };
    await new Promise((r) => setTimeout(r, 200));
    let revokedAt: number;
    try {
      const revoked = await call(a.url, "DELETE", `/v1/api-keys/${keyId}`, key);
      revokedAt = performance.now(); // the revocation has committed by now
      assert.equal(revoked.status, 200);
      assert.equal(
        (await call(a.url, "GET", "/v1/api-keys", key)).status,
        401,
        "at once where it was revoked",
      );
      // Wait (generously) until B refuses it, and a little beyond the bound.
      const deadline = Date.now() + 20_000;
      while (Date.now() < deadline) {
        const last = seen.at(-1);
        if (last && last.status === 401 && performance.now() - revokedAt > 1_500) break;
        await new Promise((r) => setTimeout(r, 20));
      }
    } finally {
      await stopHammer();
    }
    const before = seen.filter((s) => s.sentAt < revokedAt - 50);
    assert.ok(before.length > 0, "B was asked before the revocation");
    assert.ok(before.slice(0, -5).every((s) => s.status === 404), "B accepted the key before");
    const late = seen.filter((s) => s.sentAt >= revokedAt + 1_000);
    assert.ok(late.length > 0, "requests sent to B more than 1 s after the revocation");
    assert.deepEqual(
      [...new Set(late.map((s) => s.status))],
      [401],
      "refused by B from 1 s after at the latest",
    );

    // A key created now works at once on both (nothing negative was cached for it).
    const { plaintext: fresh } = await fleet.key();
    for (const p of fleet.procs) assert.equal((await call(p.url, "GET", "/v1/api-keys", fresh)).status, 200);
  } finally {
    await fleet.close();
  }
});

/**
 * Drives `concurrency` request loops for `seconds`, loop i against `targets[i % targets.length]`, and
 * returns the answers with the time window in which the limiters could have seen them.
 */
async function drive(targets: string[], key: string, concurrency: number, seconds: number) {
  const statuses: number[] = [];
  const firstSend = performance.now();
  const end = firstSend + seconds * 1000;
  let lastSend = firstSend;
  let firstAnswer = Infinity;
  await Promise.all(Array.from({ length: concurrency }, async (_, i) => {
    while (performance.now() < end) {
      lastSend = Math.max(lastSend, performance.now());
      const { status } = await call(targets[i % targets.length], "GET", `/v1/sessions/${UNKNOWN}`, key);
      firstAnswer = Math.min(firstAnswer, performance.now());
      statuses.push(status);
    }
  }));
  const lastAnswer = performance.now();
  const admitted = statuses.filter((s) => s === 404).length;
  const limited = statuses.filter((s) => s === 429).length;
  assert.equal(admitted + limited, statuses.length, `only 404 and 429: ${[...new Set(statuses)]}`);
  return {
    admitted,
    limited,
    /** The window any admission happened in, at most. */
    outerS: (lastAnswer - firstSend) / 1000,
    /** The window in which requests were always waiting, at least. */
    innerS: (lastSend - firstAnswer) / 1000,
  };
}

for (const n of [1, 3]) {
  Deno.test(`fleet: ${n} process(es) together hold one key's rate (even load, then all on one process)`, async () => {
    const perMinute = 1200; // 20/s
    const burst = 20;
    const fleet = await startFleet(n, {
      SVC_RATE_LIMIT_PER_MINUTE: String(perMinute),
      SVC_RATE_LIMIT_BURST: String(burst),
    });
    try {
      const rate = perMinute / 60;
      const urls = fleet.procs.map((p) => p.url);
      // Even load (round robin), offered far above the rate.
      const { plaintext: k1 } = await fleet.key();
      const even = await drive(urls, k1, 8, 5);
      assert.ok(even.limited > 0, "the load was above the limit");
      assert.ok(
        even.admitted <= 1.1 * (burst + rate * even.outerS),
        `even: ${even.admitted} admitted in at most ${even.outerS.toFixed(2)} s`,
      );
      assert.ok(
        even.admitted >= 0.8 * (burst + rate * even.innerS),
        `even: ${even.admitted} admitted in at least ${even.innerS.toFixed(2)} s`,
      );
      // The whole load on one process, the others idle: it gets (nearly) the key's whole budget, not 1/n.
      const { plaintext: k2 } = await fleet.key();
      const skewed = await drive([urls[0]], k2, 8, 5);
      assert.ok(
        skewed.admitted <= 1.1 * (burst + rate * skewed.outerS),
        `one process: ${skewed.admitted} admitted in at most ${skewed.outerS.toFixed(2)} s`,
      );
      assert.ok(
        skewed.admitted >= 0.7 * rate * skewed.innerS,
        `one process: ${skewed.admitted} admitted in at least ${skewed.innerS.toFixed(2)} s`,
      );
    } finally {
      await fleet.close();
    }
  });
}

Deno.test("fleet: a process that ended a session never shows it active afterwards (own end and remote end)", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  const fleet = await startFleet(2, { SVC_RATE_LIMIT_PER_MINUTE: "0" });
  const [a, b] = fleet.procs;
  try {
    const { plaintext: key } = await fleet.key();
    const create = async () => {
      const res = await call(a.url, "POST", "/v1/sessions", key, engineBody(engine.url));
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body.session_id as string;
    };
    for (const [label, ender] of [["own end (A runs it)", a], ["remote end (B asks A)", b]] as const) {
      const sid = await create();
      // Both processes keep reading the session while it ends (their session caches are hot).
      let stop = false;
      const readEnd = performance.now() + 60_000; // bounded even if the test fails before it stops
      const readers = fleet.procs.map(async (p) => {
        while (!stop && performance.now() < readEnd) await call(p.url, "GET", `/v1/sessions/${sid}`, key);
      });
      const stopReaders = async () => {
        stop = true;
        await Promise.all(readers);
      };
      const after: string[] = [];
      try {
        await new Promise((r) => setTimeout(r, 100));
        const ended = await call(ender.url, "POST", `/v1/sessions/${sid}/end`, key);
        assert.equal(ended.status, 200, `${label}: ${JSON.stringify(ended.body)}`);
        for (let i = 0; i < 50; i++) {
          after.push(String((await call(ender.url, "GET", `/v1/sessions/${sid}`, key)).body.status));
        }
      } finally {
        await stopReaders();
      }
      assert.ok(!after.includes("active"), `${label}: reads after the end: ${after}`);
      // the process that ran the teardown wrote the final state itself: it reads it back at once
      if (ender === a) assert.deepEqual([...new Set(after)], ["ended"], label);
      // The other process catches up within its staleness bound.
      const other = ender === a ? b : a;
      const deadline = Date.now() + 20_000;
      let status = "";
      while (Date.now() < deadline) {
        status = String((await call(other.url, "GET", `/v1/sessions/${sid}`, key)).body.status);
        if (status === "ended") break;
        await new Promise((r) => setTimeout(r, 10));
      }
      assert.equal(status, "ended", `${label}: the other process`);
    }
  } finally {
    await fleet.close();
    await engine.close();
  }
});
