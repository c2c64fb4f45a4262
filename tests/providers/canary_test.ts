/**
 * Secret canary for the vendor bridges: a unique credential string in every vendor credential field
 * (vendor1 client secret, vendor2 access token, vendor3 API key and signed URL) across sessions that run and
 * end (gracefully, forced, by the vendor) and starts the vendors refuse. Afterwards it appears nowhere: not
 * in KV, the logs, the responses or the webhooks (bodies and headers); the fakes saw it only where each
 * vendor expects it; and every credential holder is zeroed. The signed URL the service minted is held to
 * the same rule.
 */
import assert from "node:assert/strict";
import { startVendor1Fake } from "../../testing/fakes/vendor1_realtime.ts";
import { startVendor2Fake } from "../../testing/fakes/vendor2.ts";
import { startVendor3Fake } from "../../testing/fakes/vendor3.ts";
import { createBridges } from "../../src/providers/bridges.ts";
import { loadConfig } from "../../src/config.ts";
import { silentLogger } from "../../src/log.ts";
import { startWebhookReceiver } from "../../testing/webhook_receiver.ts";
import { KeepingHolders, testTls, withVendors } from "./_helpers.ts";

const CANARY = `canary${crypto.randomUUID().replaceAll("-", "")}`;
const AGENT = "agent_canary";

Deno.test("vendor canary: credentials reach no KV entry, log line, response or webhook, only their place at the vendor, and are zeroed", async () => {
  const v1 = startVendor1Fake(testTls, { secret: `ek_${CANARY}` });
  const v2 = startVendor2Fake(testTls, { token: `tok_${CANARY}`, agents: [AGENT] });
  const v3 = startVendor3Fake(testTls, {
    publicAgents: [],
    privateAgents: [AGENT],
    apiKey: `xi_${CANARY}`,
    signatures: [`cvtkn_${CANARY}`],
  });
  const receiver = startWebhookReceiver(testTls);
  const env = {
    SVC_VENDOR1_REALTIME_URL: v1.url,
    SVC_VENDOR2_URL: v2.url,
    SVC_VENDOR3_URL: v3.url,
    SVC_VENDOR3_API_URL: v3.apiUrl,
    SVC_VENDOR3_SIGNED_URL_HOSTS: "localhost",
    SVC_WEBHOOK_ALLOW_PRIVATE: "true",
  };
  const real = await createBridges({
    config: loadConfig(env),
    logger: silentLogger,
    caCerts: [testTls.caPem],
  });
  const keep = {
    vendor1_realtime: new KeepingHolders(real.vendor1_realtime),
    vendor2: new KeepingHolders(real.vendor2),
    vendor3: new KeepingHolders(real.vendor3),
  };
  const signed = `${v3.url}?agent_id=${AGENT}&conversation_signature=cvtkn_${CANARY}`;
  const bodies = {
    v1: (s = `ek_${CANARY}`) => ({
      provider_type: "vendor1_realtime",
      provider_config: { vendor1_realtime: { client_secret: s } },
      webhook_url: receiver.url,
    }),
    v2: (t = `tok_${CANARY}`) => ({
      provider_type: "vendor2",
      provider_config: { vendor2: { access_token: t, agent_id: AGENT } },
      webhook_url: receiver.url,
    }),
    v3key: (k = `xi_${CANARY}`) => ({
      provider_type: "vendor3",
      provider_config: { vendor3: { agent_id: AGENT, api_key: k } },
      webhook_url: receiver.url,
    }),
    v3signed: (u = signed) => ({
      provider_type: "vendor3",
      provider_config: { vendor3: { agent_id: AGENT, signed_url: u } },
      webhook_url: receiver.url,
    }),
  };
  try {
    await withVendors(env, async ({ h, key, create }) => {
      const responses: string[] = [];
      const send = async (body: unknown) => {
        const res = await create(body);
        responses.push(res.text, JSON.stringify([...res.headers]));
        return res;
      };
      const live: string[] = [];
      for (const body of [bodies.v1(), bodies.v2(), bodies.v3key(), bodies.v3signed()]) {
        const res = await send(body);
        assert.equal(res.status, 200, res.text);
        live.push(res.body.session_id);
      }
      // refused starts: wrong credentials carrying the canary
      assert.equal((await send(bodies.v1(`ek_wrong_${CANARY}`))).status, 502);
      assert.equal((await send(bodies.v2(`tok_wrong_${CANARY}`))).status, 502);
      assert.equal((await send(bodies.v3key(`xi_wrong_${CANARY}`))).status, 502);
      // refused before any connection (host not allowed)
      assert.equal((await send(bodies.v3signed(signed.replace("localhost", "127.0.0.1")))).status, 400);
      // ends: graceful, forced, by the vendor
      responses.push((await h.req("POST", `/v1/sessions/${live[0]}/end`, { key })).text);
      responses.push((await h.req("POST", `/v1/sessions/${live[1]}/end?force=true`, { key })).text);
      v3.conversations[0].end();
      v3.conversations[1].fail();
      await receiver.waitFor(
        () => receiver.accepted().filter((r) => r.body.includes('"session.ended"')).length === 4,
        20_000,
        "end webhooks",
      );
      for (const sid of live) responses.push((await h.req("GET", `/v1/sessions/${sid}`, { key })).text);

      // where the fakes saw it: only in each vendor's place
      const v1Seen = v1.server.requests.map((
        r,
      ) => [r.url.href, [...r.headers].filter(([n]) => n !== "authorization")]);
      assert.ok(!JSON.stringify(v1Seen).includes(CANARY), "vendor1: only in Authorization");
      const v2Seen = v2.server.requests.map((r) => [...r.headers]);
      assert.ok(
        !JSON.stringify(v2Seen).includes(CANARY),
        "vendor2: only in the access_token query parameter",
      );
      const v3Seen = v3.server.requests.map((r) => [
        r.url.pathname === "/v1/convai/conversation/get-signed-url" ? r.url.href : "",
        [...r.headers].filter(([n]) => n !== "xi-api-key"),
      ]);
      assert.ok(!JSON.stringify(v3Seen).includes(CANARY), "vendor3: the key only in xi-api-key");

      // what the service minted is a credential too
      const minted = v3.server.requests.find((r) =>
        r.url.pathname === "/v1/convai/conversation" &&
        r.url.searchParams.get("conversation_signature") !== `cvtkn_${CANARY}`
      )!.url.searchParams.get("conversation_signature")!;

      const hooks = receiver.received.map((r) => `${JSON.stringify([...r.headers])}\n${r.body}`).join("\n");
      const dump: string[] = [];
      for await (const e of h.kv.list({ prefix: [] })) {
        dump.push(JSON.stringify(e.key), JSON.stringify(e.value));
      }
      for (const secret of [CANARY, minted]) {
        assert.ok(!dump.join("\n").includes(secret), "found in KV");
        assert.ok(!h.logs.join("\n").includes(secret), "found in the logs");
        assert.ok(!responses.join("\n").includes(secret), "found in a response");
        assert.ok(!hooks.includes(secret), "found in a webhook");
      }
      assert.ok(
        !h.logs.join("\n").match(/access_token=|conversation_signature=|agent_id=/),
        "no vendor URL query logged",
      );
    }, {
      harness: {
        bridges: keep,
        lifecycle: true,
        webhookCaCerts: [testTls.caPem],
        teardownTimeoutMs: 1000,
      },
    });
    const holders = [...keep.vendor1_realtime.holders, ...keep.vendor2.holders, ...keep.vendor3.holders];
    assert.equal(holders.length, 7);
    for (const holder of holders) {
      assert.ok(holder.isZeroed());
      assert.ok(holder.snapshotBytes().every((b) => b === 0), "holder bytes are all zero");
    }
  } finally {
    await receiver.close();
    await v1.close();
    await v2.close();
    await v3.close();
  }
});
