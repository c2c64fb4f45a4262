/**
 * Secret canary: a unique credential string is sent in every credential field of valid and invalid
 * create requests; afterwards it must appear nowhere: not in KV, logs, responses, error bodies, or the
 * webhooks the sessions caused (bodies and headers, which also carry no API key, token or signing secret);
 * and every credential holder's bytes must be zero once its session is over.
 */
import { DEADLINE_MS } from "../../testing/deadline.ts";
import assert from "node:assert/strict";
import { createBridge } from "../../src/providers/external_engine/bridge.ts";
import type { ConnectRequest, ProviderBridge } from "../../src/providers/types.ts";
import { UnavailableBridge } from "../../testing/unavailable_bridge.ts";
import type { CredentialHolder } from "../../src/auth/credential_holder.ts";
import { silentLogger } from "../../src/log.ts";
import { systemClock } from "../../src/clock.ts";
import { createHarness } from "../../testing/harness.ts";
import { startFakeEngine } from "../../testing/fake_engine.ts";
import { engineBody, testTls } from "../../testing/fixtures.ts";
import { startWebhookReceiver } from "../../testing/webhook_receiver.ts";
import { InputTurns } from "../../src/providers/wire/input_turns.ts";

const CANARY = `canary${crypto.randomUUID().replaceAll("-", "")}`;

class Recording implements ProviderBridge {
  constructor(readonly inner: ProviderBridge, readonly holders: CredentialHolder[]) {}
  connect(request: ConnectRequest) {
    this.holders.push(request.credentials);
    return this.inner.connect(request);
  }
}

Deno.test("secret canary: credentials reach no KV entry, log line, response or error, and are zeroed", async () => {
  const ok = await startFakeEngine(testTls, "ok");
  const refusing = await startFakeEngine(testTls, "close_4001");
  const slow = await startFakeEngine(testTls, "ignore_end");
  const holders: CredentialHolder[] = [];
  const external = new Recording(
    createBridge({
      caCerts: [testTls.caPem],
      logger: silentLogger,
      clock: systemClock,
      settings: {},
      inputTurns: new InputTurns(),
    }),
    holders,
  );
  const unavailable = new Recording(new UnavailableBridge(), holders);
  const receiver = startWebhookReceiver(testTls);
  const h = await createHarness({
    teardownTimeoutMs: 300,
    webhookCaCerts: [testTls.caPem],
    lifecycle: true,
    env: { SVC_WEBHOOK_ALLOW_PRIVATE: "true" },
    bridges: {
      external_engine: external,
      vendor1_realtime: unavailable,
      vendor2: unavailable,
      vendor3: unavailable,
    },
  });
  const responses: string[] = [];
  try {
    const key = await h.key("proj_a");
    const send = async (body: unknown, headers: Record<string, string> = {}) => {
      const res = await h.req("POST", "/v1/sessions", { key, body, headers });
      responses.push(res.text, JSON.stringify([...res.headers]));
      return res;
    };
    const withCanary = (url: string, extra: Record<string, unknown> = {}) => {
      const b = engineBody(url, { webhook_url: receiver.url, ...extra }, CANARY);
      (b.provider_config.external_engine as Record<string, unknown>).url = `${url}?k=${CANARY}`;
      return b;
    };

    // valid sessions: one ended gracefully, one forced, one torn down after a teardown timeout
    const live = [];
    for (const url of [ok.url, ok.url, slow.url]) {
      const res = await send(withCanary(url), { "Idempotency-Key": crypto.randomUUID() });
      assert.equal(res.status, 200, res.text);
      live.push(res.body.session_id);
    }
    // a replay of an idempotent create with the canary in the body
    const idem = { "Idempotency-Key": "canary-idem" };
    assert.equal((await send(withCanary(ok.url), idem)).status, 200);
    assert.equal((await send(withCanary(ok.url), idem)).status, 200);
    assert.equal((await send(withCanary(refusing.url), idem)).status, 422);

    // refused and failing starts
    assert.equal((await send(withCanary(refusing.url))).status, 502);
    assert.equal(
      (await send({
        provider_type: "vendor1_realtime",
        provider_config: { vendor1_realtime: { client_secret: CANARY } },
      })).status,
      503,
    );
    assert.equal(
      (await send({
        provider_type: "vendor2",
        provider_config: { vendor2: { access_token: CANARY, agent_id: "a" } },
      })).status,
      503,
    );
    assert.equal(
      (await send({
        provider_type: "vendor3",
        provider_config: { vendor3: { agent_id: "a", api_key: CANARY } },
      })).status,
      503,
    );

    // invalid bodies carrying the canary in values, header names and unknown field names
    const invalid: unknown[] = [
      {
        provider_type: "vendor1_realtime",
        provider_config: { vendor1_realtime: { client_secret: CANARY, extra: CANARY } },
      },
      { provider_type: "vendor2", provider_config: { vendor2: { access_token: CANARY } } },
      { provider_type: "vendor2", provider_config: { vendor1_realtime: { client_secret: CANARY } } },
      withCanary(ok.url, { provider_connection_id: CANARY }),
      withCanary(ok.url, { [CANARY]: 1 }),
      { ...withCanary(ok.url), transport: CANARY },
      { ...withCanary(ok.url), webhook_url: `http://${CANARY}.example` },
      {
        provider_type: "external_engine",
        provider_config: {
          external_engine: { url: `ws://${CANARY}.example`, auth_headers: { [`bad ${CANARY}`]: CANARY } },
        },
      },
      {
        provider_type: "external_engine",
        provider_config: {
          external_engine: { url: ok.url, auth_headers: { [`X-${CANARY}`]: `${CANARY}\n` } },
        },
      },
      {
        provider_type: "vendor3",
        provider_config: { vendor3: { agent_id: CANARY, signed_url: `wss://${CANARY}.example/x` } },
      },
      `{"provider_type":"vendor1_realtime","provider_config":{"vendor1_realtime":{"client_secret":"${CANARY}"`,
    ];
    for (const body of invalid) {
      const res = await send(body);
      assert.ok(
        res.status >= 400 && res.status < 500,
        `expected a 4xx for ${JSON.stringify(body).slice(0, 80)}: ${res.text}`,
      );
    }

    // end the live sessions three ways
    for (const [i, sid] of live.entries()) {
      const res = await h.req("POST", `/v1/sessions/${sid}/end${i === 1 ? "?force=true" : ""}`, { key });
      responses.push(res.text);
      assert.equal(res.status, 200, res.text);
    }
    // GETs for good measure
    for (const sid of live) responses.push((await h.req("GET", `/v1/sessions/${sid}`, { key })).text);
    // the webhooks: started + ended for the three ended sessions, started for the idempotent one, failed for
    // the refused start (the 503s of unbridged vendors have no webhook_url)
    await receiver.waitFor(() => receiver.accepted().length === 8, DEADLINE_MS, "webhooks");
    const hooks = receiver.received.map((r) => `${JSON.stringify([...r.headers])}\n${r.body}`).join("\n");
    assert.ok(hooks.includes('"session.ended"') && hooks.includes('"session.failed"'));
    assert.ok(!hooks.includes(CANARY), "canary found in a webhook");
    assert.ok(!hooks.includes(key), "API key found in a webhook");
    assert.ok(!hooks.includes("svc_sk_"), "an API key found in a webhook");
    const secret = (await h.req("GET", "/v1/webhooks/secret", { key })).body.secret as string;
    assert.ok(
      !hooks.includes(secret) && !hooks.includes(secret.slice(6)),
      "signing secret found in a webhook",
    );
    for (const text of responses) {
      for (const m of text.matchAll(/"(?:client_token|session_token)":"([^"]+)"/g)) {
        assert.ok(!hooks.includes(m[1]), "a token found in a webhook");
      }
    }

    // 1. KV: a full dump of keys and values
    const dump: string[] = [];
    for await (const e of h.kv.list({ prefix: [] })) {
      dump.push(JSON.stringify(e.key), JSON.stringify(e.value));
    }
    assert.ok(dump.length > 0);
    assert.ok(!dump.join("\n").includes(CANARY), "canary found in KV");
    // 2. logs
    assert.ok(h.logs.length > 0);
    assert.ok(!h.logs.join("\n").includes(CANARY), "canary found in logs");
    // 3. responses and error bodies (and their headers)
    assert.ok(!responses.join("\n").includes(CANARY), "canary found in a response");
    // 4. holders: redacted when printed, and zeroed once their session is over
    assert.ok(holders.length >= 8, `${holders.length} holders recorded`);
    for (const holder of holders) {
      assert.ok(!JSON.stringify({ holder }).includes(CANARY));
      assert.ok(!Deno.inspect(holder).includes(CANARY));
      assert.ok(!String(holder).includes(CANARY));
      assert.ok(!JSON.stringify(structuredClone(holder)).includes(CANARY));
    }
    // the replayed idempotent session is still live: end everything, then every holder is zero
    await h.runtime.shutdown();
    for (const holder of holders) {
      assert.ok(holder.isZeroed());
      assert.ok(holder.snapshotBytes().every((b) => b === 0), "holder bytes are all zero");
      assert.throws(() => holder.secret("url"));
    }
  } finally {
    await h.close();
    await ok.close();
    await refusing.close();
    await slow.close();
    await receiver.close();
  }
});
