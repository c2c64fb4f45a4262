/**
 * Every vendor's quota signals, as the vendors' own sources show them (each shape is defined, with its
 * source, in the fakes: `QUOTA_ERROR`, `QUOTA_FLAT_ERROR`, `QUOTA_CLOSE_REASON`, `MINT_QUOTA_BODY`), through
 * the real HTTP API: before ready → `429 SVC_RATE_LIMIT_PROVIDER_QUOTA` with `retry_after`; during a session
 * → the session ends `ended_with_warnings` with the end reason `engine_quota_exceeded` (not a normal
 * hang-up), in `GET` and in the `session.ended` webhook (with a provider-agnostic warning); the close reason alone says so too; a signed-URL mint
 * refused with `401 quota_exceeded` → 429.
 */
import assert from "node:assert/strict";
import { startVendor1Fake } from "../../testing/fakes/vendor1_realtime.ts";
import { startVendor2Fake, type Vendor2Behavior } from "../../testing/fakes/vendor2.ts";
import { startVendor3Fake, type Vendor3Behavior } from "../../testing/fakes/vendor3.ts";
import { startFakeEngine } from "../../testing/fake_engine.ts";
import { checkErrorBody, engineBody } from "../../testing/fixtures.ts";
import { startWebhookReceiver } from "../../testing/webhook_receiver.ts";
import { testTls, type VendorContext, withVendors } from "./_helpers.ts";

const SECRET = `ek_test_${crypto.randomUUID().replaceAll("-", "")}`;
const TOKEN = `tok_${crypto.randomUUID().replaceAll("-", "")}`;
const AGENT = "agent_quota_01";
const API_KEY = `xi_${crypto.randomUUID().replaceAll("-", "")}`;

const v1Body = {
  provider_type: "vendor1_realtime",
  provider_config: { vendor1_realtime: { client_secret: SECRET } },
};
const v2Body = {
  provider_type: "vendor2",
  provider_config: { vendor2: { access_token: TOKEN, agent_id: AGENT } },
};
const v3Body = { provider_type: "vendor3", provider_config: { vendor3: { agent_id: AGENT } } };
const v3KeyBody = {
  provider_type: "vendor3",
  provider_config: { vendor3: { agent_id: AGENT, api_key: API_KEY } },
};

/** Waits for the session to leave `active`; returns its record. */
// deno-lint-ignore no-explicit-any
async function ended(ctx: VendorContext, sid: string): Promise<any> {
  const deadline = Date.now() + 20_000;
  let got = await ctx.get(sid);
  while (got.status === "active" && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
    got = await ctx.get(sid);
  }
  return got;
}

/**
 * Runs `kill` on a live session of `body` and checks the quota end: `ended_with_warnings`,
 * `engine_quota_exceeded`, a provider-agnostic warning, and the `session.ended` webhook saying the same.
 */
async function quotaEnd(env: Record<string, string>, body: Record<string, unknown>, kill: () => void) {
  const receiver = startWebhookReceiver(testTls);
  try {
    await withVendors({ ...env, SVC_WEBHOOK_ALLOW_PRIVATE: "true" }, async (ctx) => {
      const res = await ctx.create({ ...body, webhook_url: receiver.url });
      assert.equal(res.status, 200, res.text);
      const sid = res.body.session_id;
      kill();
      const got = await ended(ctx, sid);
      assert.equal(got.status, "ended_with_warnings");
      assert.equal(got.end_reason, "engine_quota_exceeded");
      await receiver.waitFor(
        () => receiver.accepted().some((r) => JSON.parse(r.body).type === "session.ended"),
        20_000,
        "session.ended",
      );
      const event = receiver.accepted().map((r) => JSON.parse(r.body)).find((e) =>
        e.type === "session.ended"
      );
      assert.equal(event.data.session_id, sid);
      assert.equal(event.data.end_reason, "engine_quota_exceeded");
      assert.equal(event.data.status, "ended_with_warnings");
      assert.match(event.data.warning, /quota/);
      assert.ok(
        !/openai|cartesia|elevenlabs|vendor/i.test(event.data.warning),
        "the warning names no vendor",
      );
      assert.ok(!ctx.h.logs.join("\n").includes("engine start failed"), "a quota end is no start failure");
    }, { harness: { lifecycle: true, webhookCaCerts: [testTls.caPem] } });
  } finally {
    await receiver.close();
  }
}

// ---- vendor1 ----

Deno.test("quota vendor1: insufficient_quota before ready → 429 with retry_after", async () => {
  const fake = startVendor1Fake(testTls, { secret: SECRET, behavior: "error_quota" });
  try {
    await withVendors({ SVC_VENDOR1_REALTIME_URL: fake.url }, async ({ create }) => {
      checkErrorBody(await create(v1Body), {
        status: 429,
        code: "SVC_RATE_LIMIT_PROVIDER_QUOTA",
        retryable: true,
      });
    });
  } finally {
    await fake.close();
  }
});

Deno.test("quota vendor1: insufficient_quota then a close during the session → engine_quota_exceeded", async () => {
  const fake = startVendor1Fake(testTls, { secret: SECRET });
  try {
    await quotaEnd({ SVC_VENDOR1_REALTIME_URL: fake.url }, v1Body, () => fake.call().quotaKill());
  } finally {
    await fake.close();
  }
});

// ---- vendor2 ----

const V2_START: [string, Vendor2Behavior, number | null][] = [
  ["a plan limit at the upgrade (HTTP 429 + Retry-After)", "reject_429", 23],
  [
    "the generic error object (status_code 429, concurrency_limited) after session_create",
    "quota_error",
    null,
  ],
];
for (const [what, behavior, retryAfter] of V2_START) {
  Deno.test(`quota vendor2: ${what} → 429 with retry_after`, async () => {
    const fake = startVendor2Fake(testTls, { token: TOKEN, agents: [AGENT], behavior });
    try {
      await withVendors({ SVC_VENDOR2_URL: fake.url }, async ({ create }) => {
        const b = checkErrorBody(await create(v2Body), {
          status: 429,
          code: "SVC_RATE_LIMIT_PROVIDER_QUOTA",
          retryable: true,
        });
        if (retryAfter !== null) assert.equal(b.retry_after, retryAfter);
      });
    } finally {
      await fake.close();
    }
  });
}

Deno.test("quota vendor2: the generic quota error then close 1008 during the call → engine_quota_exceeded", async () => {
  const fake = startVendor2Fake(testTls, { token: TOKEN, agents: [AGENT] });
  try {
    await quotaEnd({ SVC_VENDOR2_URL: fake.url }, v2Body, () => fake.call().quotaKill());
  } finally {
    await fake.close();
  }
});

Deno.test("quota vendor2: a close whose reason alone speaks of the limit → engine_quota_exceeded", async () => {
  const fake = startVendor2Fake(testTls, { token: TOKEN, agents: [AGENT] });
  try {
    await quotaEnd({ SVC_VENDOR2_URL: fake.url }, v2Body, () => fake.call().quotaKill({ errorEvent: false }));
  } finally {
    await fake.close();
  }
});

// ---- vendor3 ----

const V3_OPTIONS = { publicAgents: [AGENT], privateAgents: [], apiKey: API_KEY };
const V3_ENV = (fake: { url: string; apiUrl: string }) => ({
  SVC_VENDOR3_URL: fake.url,
  SVC_VENDOR3_API_URL: fake.apiUrl,
});

const V3_START: [string, Vendor3Behavior, Record<string, unknown>][] = [
  ["the flat quota error and close 1002 before the metadata", "quota_flat", v3Body],
  ["the typed error_event (quota_exceeded) and close 1008", "error_quota", v3Body],
  ["a signed-URL mint refused with 401 quota_exceeded", "mint_quota", v3KeyBody],
];
for (const [what, behavior, body] of V3_START) {
  Deno.test(`quota vendor3: ${what} → 429 with retry_after`, async () => {
    const fake = startVendor3Fake(testTls, { ...V3_OPTIONS, behavior });
    try {
      await withVendors(V3_ENV(fake), async ({ create, h }) => {
        const b = checkErrorBody(await create(body), {
          status: 429,
          code: "SVC_RATE_LIMIT_PROVIDER_QUOTA",
          retryable: true,
        });
        for (const leak of ["elevenlabs", "quota of 10000", "localhost", API_KEY]) {
          assert.ok(!String(b.message).toLowerCase().includes(leak.toLowerCase()), `message leaks ${leak}`);
        }
        assert.equal((await h.kv.get(["project", "proj_vendor", "live_sessions"])).value, 0, "slot freed");
      });
    } finally {
      await fake.close();
    }
  });
}

for (const code of [1002, 1000]) {
  Deno.test(`quota vendor3: the flat quota error then close ${code} after the greeting → engine_quota_exceeded, not agent_ended`, async () => {
    const fake = startVendor3Fake(testTls, V3_OPTIONS);
    try {
      await quotaEnd(V3_ENV(fake), v3Body, () => {
        const c = fake.conversation();
        c.speak([new Int16Array(1600)], "Hello, how can I help?");
        c.quotaKill({ code });
      });
    } finally {
      await fake.close();
    }
  });
}

Deno.test("quota vendor3: a close whose reason alone says the quota is exceeded → engine_quota_exceeded", async () => {
  const fake = startVendor3Fake(testTls, V3_OPTIONS);
  try {
    await quotaEnd(
      V3_ENV(fake),
      v3Body,
      () => fake.conversation().quotaKill({ errorEvent: false, code: 1000 }),
    );
  } finally {
    await fake.close();
  }
});

// ---- external engine (protocol V0: error rate_limited, close 4029) ----

Deno.test("quota external_engine: error rate_limited (fatal) then close 4029 during the session → engine_quota_exceeded", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  try {
    await quotaEnd({}, engineBody(engine.url), () => {
      engine.sendAll({ type: "error", code: "rate_limited", message: "quota", fatal: true });
      engine.closeAll(4029);
    });
  } finally {
    await engine.close();
  }
});
