/**
 * A normal end logs no failure: a session ended through the API, or by the engine's own normal close, logs
 * no "engine start failed" line (every normal end logged one, from the handshake's close listener mapping
 * the close of a socket that had long become ready).
 */
import assert from "node:assert/strict";
import { startVendor1Fake } from "../../testing/fakes/vendor1_realtime.ts";
import { startVendor2Fake } from "../../testing/fakes/vendor2.ts";
import { startVendor3Fake } from "../../testing/fakes/vendor3.ts";
import { startFakeEngine } from "../../testing/fake_engine.ts";
import { engineBody } from "../../testing/fixtures.ts";
import { testTls, type VendorContext, withVendors } from "./_helpers.ts";

/** Ends one session through the API and one by the engine; checks the ends and the log. */
async function normalEnds(ctx: VendorContext, body: unknown, engineEnds: () => void) {
  const a = await ctx.create(body);
  assert.equal(a.status, 200, a.text);
  const ended = await ctx.h.req("POST", `/v1/sessions/${a.body.session_id}/end`, { key: ctx.key });
  assert.equal(ended.body.status, "ended", ended.text);
  const b = await ctx.create(body);
  assert.equal(b.status, 200, b.text);
  engineEnds();
  const deadline = Date.now() + 20_000;
  while ((await ctx.get(b.body.session_id)).status === "active" && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
  }
  const got = await ctx.get(b.body.session_id);
  assert.equal(got.status, "ended");
  assert.equal(got.end_reason, "engine_ended");
  await new Promise((r) => setTimeout(r, 100));
  const logs = ctx.h.logs.join("\n");
  assert.ok(!logs.includes("engine start failed"), "no start failure is logged for a normal end");
  assert.ok(!logs.includes("SVC_PROVIDER_DOWNSTREAM_FAILED"));
}

Deno.test("normal ends log no failure: vendor1_realtime", async () => {
  const fake = startVendor1Fake(testTls, { secret: "ek_end" });
  try {
    await withVendors({ SVC_VENDOR1_REALTIME_URL: fake.url }, (ctx) =>
      normalEnds(
        ctx,
        {
          provider_type: "vendor1_realtime",
          provider_config: { vendor1_realtime: { client_secret: "ek_end" } },
        },
        () => fake.call().ws.close(1000),
      ));
  } finally {
    await fake.close();
  }
});

Deno.test("normal ends log no failure: vendor2", async () => {
  const fake = startVendor2Fake(testTls, { token: "tok_end", agents: ["agent_end"] });
  try {
    await withVendors({ SVC_VENDOR2_URL: fake.url }, (ctx) =>
      normalEnds(
        ctx,
        {
          provider_type: "vendor2",
          provider_config: { vendor2: { access_token: "tok_end", agent_id: "agent_end" } },
        },
        () => fake.call().hangup(),
      ));
  } finally {
    await fake.close();
  }
});

Deno.test("normal ends log no failure: vendor3", async () => {
  const fake = startVendor3Fake(testTls, { publicAgents: ["agent_end"], privateAgents: [], apiKey: "xi" });
  try {
    await withVendors({ SVC_VENDOR3_URL: fake.url }, (ctx) =>
      normalEnds(
        ctx,
        { provider_type: "vendor3", provider_config: { vendor3: { agent_id: "agent_end" } } },
        () => fake.conversation().end(),
      ));
  } finally {
    await fake.close();
  }
});

Deno.test("normal ends log no failure: external_engine", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  try {
    await withVendors(
      {},
      (ctx) => normalEnds(ctx, engineBody(engine.url), () => engine.closeAll(1000, true)),
    );
  } finally {
    await engine.close();
  }
});
