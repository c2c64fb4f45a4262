/**
 * Graceful shutdown of a real service process: SIGTERM (and SIGINT) end its sessions with
 * `service_shutdown` and deliver their webhooks before it exits 0, within the shutdown budget.
 */
import assert from "node:assert/strict";
import { LifecycleEvent } from "../../src/vocabulary/schemas.ts";
import { createApiKey } from "../../src/kv/api_keys.ts";
import { startFakeEngine } from "../../testing/fake_engine.ts";
import { engineBody, testTls } from "../../testing/fixtures.ts";
import { startServiceProcess } from "../../testing/service_process.ts";
import { startWebhookReceiver } from "../../testing/webhook_receiver.ts";

for (const signal of ["SIGTERM", "SIGINT"] as const) {
  Deno.test(`shutdown: ${signal} ends the process's sessions and delivers their events before exiting`, async () => {
    const dir = await Deno.makeTempDir();
    const engine = await startFakeEngine(testTls, "ok");
    const receiver = startWebhookReceiver(testTls);
    await Deno.writeTextFile(`${dir}/ca.pem`, testTls.caPem);
    const kv = await Deno.openKv(`${dir}/svc.kv`);
    const { plaintext: key } = await createApiKey(kv, {
      projectId: "proj_stop",
      name: "t",
      scopes: ["sessions:read", "sessions:write"],
      now: Date.now(),
      createdBy: "test",
    });
    const proc = await startServiceProcess({
      SVC_KV: `${dir}/svc.kv`,
      SVC_ENGINE_CA_FILE: `${dir}/ca.pem`,
      SVC_WEBHOOK_CA_FILE: `${dir}/ca.pem`,
      SVC_WEBHOOK_ALLOW_PRIVATE: "true",
      SVC_WEBHOOK_POLL_MS: "60000", // nothing is delivered before the shutdown's own pass
      SVC_SHUTDOWN_TIMEOUT_S: "10",
    });
    try {
      const sids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`${proc.url}/v1/sessions`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify(engineBody(engine.url, { webhook_url: receiver.url })),
        });
        const body = await res.json();
        assert.equal(res.status, 200, JSON.stringify(body));
        sids.push(body.session_id);
      }
      proc.kill(signal);
      const { status, log } = await proc.exited();
      assert.equal(status.code, 0, log);
      // everything below was done by the process before it exited
      const events = receiver.accepted().map((r) => LifecycleEvent.parse(JSON.parse(r.body)));
      for (const sid of sids) {
        const mine = events.filter((e) => e.data.session_id === sid);
        assert.deepEqual(mine.map((e) => e.type).sort(), ["session.ended", "session.started"], sid);
        const ended = mine.find((e) => e.type === "session.ended")!;
        assert.equal(ended.type === "session.ended" && ended.data.end_reason, "service_shutdown");
        const rec =
          (await kv.get<{ status: string; end_reason: string }>(["project", "proj_stop", "session", sid]))
            .value!;
        assert.equal(rec.status, "ended");
        assert.equal(rec.end_reason, "service_shutdown");
      }
      assert.equal((await kv.get(["project", "proj_stop", "live_sessions"])).value, 0);
      const leases = await Array.fromAsync(kv.list({ prefix: ["owner_lease"] }));
      assert.equal(leases.length, 0, "the lease was given up");
      assert.equal(
        (await Array.fromAsync(kv.list({ prefix: ["webhook_due"] }))).length,
        0,
        "nothing left due",
      );
    } finally {
      proc.kill("SIGKILL");
      await proc.exited();
      kv.close();
      await engine.close();
      await receiver.close();
      await Deno.remove(dir, { recursive: true });
    }
  });
}
