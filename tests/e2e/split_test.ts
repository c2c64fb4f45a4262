/**
 * The split for real, as separate OS processes sharing one KV through a KV Connect server: two workers
 * and an API process under the Deno Deploy-like sandbox (`--deny-run --deny-write --deny-ffi`). Sessions
 * created through the API land on both workers, stream media from their `media_url`, get fresh client tokens
 * and end through the API; a worker at capacity is never placed on; SIGKILL of a worker reaps its sessions;
 * no credential reaches the KV file; the API process has no child process.
 */
import assert from "node:assert/strict";
import { runCli } from "../../testing/cli.ts";
import { startFakeEngine } from "../../testing/fake_engine.ts";
import { checkErrorBody, engineBody, testTls } from "../../testing/fixtures.ts";
import { MediaClientRecorder, until } from "../../testing/media.ts";
import { childrenOf, startApi, startKvConnect, startWorker } from "../../testing/split.ts";

Deno.test({
  name: "split: API on a Deploy-like sandbox, sessions on two workers, one shared KV",
  sanitizeResources: false, // child processes' pipes are drained in the background until they exit
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "svc_split_" });
    const caFile = `${dir}/engine-ca.pem`;
    await Deno.writeTextFile(caFile, testTls.caPem);
    const engine = await startFakeEngine(testTls, "ok");
    const kv = await startKvConnect(dir);
    const stops: (() => Promise<unknown>)[] = [];
    const clients: MediaClientRecorder[] = [];
    try {
      const workerEnv = {
        SVC_ENGINE_CA_FILE: caFile,
        SVC_RENDER_CAPACITY: "2",
        SVC_RENDER_WIDTH: "128",
        SVC_RENDER_HEIGHT: "128",
        SVC_RENDER_FPS: "10",
        SVC_RENDER_FIRST_FRAME_TIMEOUT_MS: "20000",
        SVC_PROVIDER_CONNECT_TIMEOUT_MS: "20000",
      };
      const w1 = await startWorker(kv, workerEnv);
      stops.push(async () => {
        w1.kill("SIGKILL");
        await w1.exited();
      });
      const w2 = await startWorker(kv, workerEnv);
      stops.push(async () => {
        w2.kill("SIGTERM");
        await w2.exited();
      });
      const api = await startApi(kv, { SVC_MAX_CONCURRENT_SESSIONS: "10" });
      stops.push(async () => {
        api.kill("SIGTERM");
        await api.exited();
      });

      // admin bootstrap works against the KV Connect URL.
      const boot = await runCli([
        "admin",
        "bootstrap",
        "--project",
        "proj_split",
        "--name",
        "split",
        "--json",
      ], {
        env: kv.env,
      });
      assert.equal(boot.code, 0, boot.stderr);
      const key = JSON.parse(boot.stdout).api_key as string;
      const call = async (method: string, path: string, body?: unknown) => {
        const res = await fetch(api.url + path, {
          method,
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const text = await res.text();
        return { status: res.status, headers: res.headers, text, body: text ? JSON.parse(text) : undefined };
      };

      // The credential is a canary: it must reach the engine and nothing else.
      const canary = `canary-${crypto.randomUUID()}`;
      const sessions: { id: string; media_url: string; token: string }[] = [];
      for (let i = 0; i < 4; i++) {
        const res = await call("POST", "/v1/sessions", engineBody(engine.url, {}, canary));
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.status, "active");
        sessions.push({
          id: res.body.session_id,
          media_url: res.body.stream_metadata.media_url,
          token: res.body.stream_metadata.session_token,
        });
      }
      assert.ok(
        engine.upgrades.every((h) => h.get("authorization") === `Bearer ${canary}`),
        "the engine got the credential",
      );
      // Capacity 2 each: the four sessions are on both workers, two and two.
      const ports = sessions.map((s) => new URL(s.media_url).port);
      assert.deepEqual(
        [...new Set(ports)].sort(),
        [String(w1.port), String(w2.port)].sort(),
        "media URLs point at both workers",
      );
      for (const p of [w1.port, w2.port]) assert.equal(ports.filter((x) => x === String(p)).length, 2);
      // Every slot taken: the next create is refused, retryable, and nothing is left behind.
      checkErrorBody(await call("POST", "/v1/sessions", engineBody(engine.url, {}, canary)), {
        status: 503,
        code: "SVC_RENDER_CAPACITY",
        retryable: true,
      });

      // Media streams from each session's worker.
      for (const s of sessions) {
        const c = MediaClientRecorder.withToken(s.media_url.replace(/^http/, "ws"), s.token);
        clients.push(c);
        await c.until(() => c.segments().some((seg) => seg.key), 30_000, `a keyframe from ${s.id}`);
      }

      // A fresh client token comes from the session's worker.
      const tok = await call("POST", `/v1/sessions/${sessions[0].id}/client-token`);
      assert.equal(tok.status, 200, tok.text);
      assert.equal(tok.body.stream_metadata.media_url, sessions[0].media_url);

      // An end goes straight to the owner: graceful teardown, its media client closed.
      const ended = await call("POST", `/v1/sessions/${sessions[0].id}/end`);
      assert.equal(ended.status, 200, ended.text);
      assert.equal(ended.body.status, "ended");
      assert.equal(ended.body.end_reason, "ended_by_api");
      await clients[0].closed;

      // SIGKILL one worker: its sessions are reaped by the other one (owner_lost), slots freed.
      const victim = w1;
      const victims = sessions.slice(1).filter((s) => new URL(s.media_url).port === String(victim.port));
      victim.kill("SIGKILL");
      await victim.exited();
      for (const s of victims) {
        await until(
          async () => {
            const r = await call("GET", `/v1/sessions/${s.id}`);
            return r.body.status === "ended_with_warnings" && r.body.end_reason === "owner_lost";
          },
          60_000,
          `${s.id} reaped`,
        );
      }
      // New sessions go to the survivor.
      await until(
        async () => {
          const r = await call("POST", "/v1/sessions", engineBody(engine.url, {}, canary));
          if (r.status !== 200) return false;
          assert.equal(new URL(r.body.stream_metadata.media_url).port, String(w2.port));
          sessions.push({ id: r.body.session_id, media_url: r.body.stream_metadata.media_url, token: "" });
          return true;
        },
        60_000,
        "a session placed on the surviving worker",
      );

      // The API process started nothing.
      assert.deepEqual(childrenOf(api.child.pid), [], "the API process has no child process");

      // Stop everything, then look at what reached storage.
      for (const c of clients) await c.close();
      for (const stop of stops.splice(0).reverse()) await stop();
      await kv.close();
      const bytes = await Deno.readFile(kv.path);
      const wal = await Deno.readFile(`${kv.path}-wal`).catch(() => new Uint8Array());
      for (const b of [bytes, wal]) {
        assert.ok(!new TextDecoder("latin1").decode(b).includes(canary), "no credential in the KV file");
      }
      for (const p of [api, w1, w2]) {
        const { log } = await p.exited();
        assert.ok(log.length > 0 && !log.includes(canary), "no credential in any log");
      }
    } finally {
      for (const c of clients) await c.close().catch(() => {});
      for (const stop of stops.reverse()) await stop().catch(() => {});
      await kv.close().catch(() => {});
      await engine.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "split: concurrent creates on two API processes never put a worker over capacity; a worker dying mid-start leaves nothing half-written",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "svc_split_" });
    const caFile = `${dir}/engine-ca.pem`;
    await Deno.writeTextFile(caFile, testTls.caPem);
    const ok = await startFakeEngine(testTls, "ok");
    const hang = await startFakeEngine(testTls, "never_ready");
    const kv = await startKvConnect(dir);
    const procs: { kill(s: Deno.Signal): void; exited(): Promise<unknown> }[] = [];
    try {
      const worker = await startWorker(kv, {
        SVC_ENGINE_CA_FILE: caFile,
        SVC_MEDIA_ENABLED: "false",
        SVC_RENDER_CAPACITY: "2",
        SVC_PROVIDER_CONNECT_TIMEOUT_MS: "30000",
      });
      procs.push(worker);
      const apis = [await startApi(kv), await startApi(kv)];
      procs.push(...apis);
      const boot = await runCli(["admin", "bootstrap", "--project", "proj_cap", "--name", "cap", "--json"], {
        env: kv.env,
      });
      assert.equal(boot.code, 0, boot.stderr);
      const key = JSON.parse(boot.stdout).api_key as string;
      const call = async (base: string, method: string, path: string, body?: unknown, headers = {}) => {
        const res = await fetch(base + path, {
          method,
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const text = await res.text();
        return { status: res.status, headers: res.headers, text, body: text ? JSON.parse(text) : undefined };
      };

      // Six creates at once, three through each API process: exactly the worker's two slots are used.
      const results = await Promise.all(
        Array.from(
          { length: 6 },
          (_, i) => call(apis[i % 2].url, "POST", "/v1/sessions", engineBody(ok.url)),
        ),
      );
      const created = results.filter((r) => r.status === 200);
      assert.equal(created.length, 2, results.map((r) => r.status).join(","));
      for (const r of results.filter((r) => r.status !== 200)) {
        checkErrorBody(r, { status: 503, code: "SVC_RENDER_CAPACITY", retryable: true });
      }
      for (const r of created) {
        const end = await call(apis[1].url, "POST", `/v1/sessions/${r.body.session_id}/end`);
        assert.equal(end.status, 200, end.text);
      }

      // A start under way when its worker dies: a retryable error, the record failed, the slot and the
      // idempotency key released.
      const idem = crypto.randomUUID();
      const pending = call(apis[0].url, "POST", "/v1/sessions", engineBody(hang.url), {
        "Idempotency-Key": idem,
      });
      await until(() => hang.upgrades.length > 0, 30_000, "the worker is connecting the engine");
      worker.kill("SIGKILL");
      await worker.exited();
      const res = await pending;
      checkErrorBody(res, { status: 503, code: "SVC_RENDER_CAPACITY", retryable: true });
      // The same Idempotency-Key starts over (no replay of a failed session, no "in progress").
      checkErrorBody(
        await call(apis[1].url, "POST", "/v1/sessions", engineBody(hang.url), { "Idempotency-Key": idem }),
        { status: 503, code: "SVC_RENDER_CAPACITY", retryable: true },
      );
      for (const p of procs.splice(0)) {
        p.kill("SIGTERM");
        await p.exited();
      }
      await kv.close();
      // What storage holds: the failed session, and no live slot.
      const check = await new Deno.Command(Deno.execPath(), {
        args: [
          "eval",
          "--unstable-kv",
          `
          const kv = await Deno.openKv(${JSON.stringify(kv.path)});
          const out = { live: (await kv.get(["project", "proj_cap", "live_sessions"])).value, statuses: [] };
          for await (const e of kv.list({ prefix: ["project", "proj_cap", "session"] })) out.statuses.push(e.value.status);
          console.log(JSON.stringify(out));
          kv.close();`,
        ],
        stdout: "piped",
        stderr: "inherit",
      }).output();
      const stored = JSON.parse(new TextDecoder().decode(check.stdout));
      assert.equal(stored.live, 0, "no slot held");
      // The two ended sessions, the one whose worker died mid-start, and the retry's, whose start was
      // refused because the dead worker's lease had not run out yet (both failed, slots freed).
      assert.deepEqual(stored.statuses.sort(), ["ended", "ended", "failed", "failed"]);
    } finally {
      for (const p of procs) {
        p.kill("SIGKILL");
        await p.exited();
      }
      await kv.close().catch(() => {});
      await ok.close();
      await hang.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
