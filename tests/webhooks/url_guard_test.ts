import assert from "node:assert/strict";
import { DEADLINE_MS } from "../../testing/deadline.ts";
import { listEvents } from "../../src/kv/webhook_outbox.ts";
import { checkWebhookUrl, isBlockedAddress, type Resolver } from "../../src/webhooks/url_guard.ts";
import { startFakeEngine } from "../../testing/fake_engine.ts";
import { checkErrorBody, engineBody, testTls } from "../../testing/fixtures.ts";
import { createHarness } from "../../testing/harness.ts";
import { eventually } from "../../testing/webhook_receiver.ts";

Deno.test("url guard: loopback, private, link-local, metadata and reserved addresses are blocked", () => {
  const blocked = [
    "127.0.0.1",
    "127.1.2.3",
    "0.0.0.0",
    "10.0.0.1",
    "172.16.0.1",
    "172.31.255.255",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "100.100.100.200",
    "192.0.2.1",
    "198.18.0.1",
    "224.0.0.1",
    "255.255.255.255",
    "::",
    "::1",
    "::ffff:127.0.0.1",
    "::ffff:169.254.169.254",
    "64:ff9b::a9fe:a9fe",
    "fe80::1",
    "fc00::1",
    "fd00:ec2::254",
    "ff02::1",
    "2001:db8::1",
    "2002:7f00:1::",
    "not-an-address",
  ];
  for (const a of blocked) assert.equal(isBlockedAddress(a), true, a);
  for (const a of ["93.184.216.34", "8.8.8.8", "172.32.0.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"]) {
    assert.equal(isBlockedAddress(a), false, a);
  }
});

Deno.test("url guard: IPv6 forms embedding or reaching a refused IPv4 are blocked; public embeddings are not", () => {
  const blocked = [
    "::127.0.0.1", // IPv4-compatible (deprecated): loopback
    "::7f00:1",
    "::a9fe:a9fe", // ::169.254.169.254
    "::8.8.8.8", // IPv4-compatible is refused whatever it embeds
    "::ffff:0:127.0.0.1", // IPv4-translated (SIIT)
    "::ffff:0:7f00:1",
    "::ffff:0:10.0.0.1",
    "::ffff:0:169.254.169.254",
    "64:ff9b::127.0.0.1", // NAT64 well-known prefix
    "64:ff9b::192.168.0.1",
    "64:ff9b:1::1", // NAT64 local-use /48
    "64:ff9b:1:7f00:1::",
    "64:ff9b:1:808:8:800::",
    "100::1", // discard-only
    "3fff::1", // documentation (RFC 9637)
    "[::127.0.0.1]",
  ];
  for (const a of blocked) assert.equal(isBlockedAddress(a), true, a);
  for (const a of ["64:ff9b::8.8.8.8", "::ffff:0:8.8.8.8", "::ffff:1.1.1.1", "2a00:1450:4001:80b::200e"]) {
    assert.equal(isBlockedAddress(a), false, a);
  }
});

Deno.test("url guard: refused host names are compared without a trailing dot; embedded-IPv4 literals refused", async () => {
  const resolve: Resolver = (host) => Promise.resolve(host === "ok.example" ? ["93.184.216.34"] : []);
  for (
    const url of [
      "https://localhost./hook",
      "https://localhost../hook",
      "https://api.localhost./hook",
      "https://metadata.google.internal./computeMetadata",
      "https://metadata./",
      "https://intranet./",
    ]
  ) {
    await assert.rejects(checkWebhookUrl(url, false, resolve), /public host/, url);
  }
  for (
    const url of [
      "https://[::127.0.0.1]/",
      "https://[::ffff:0:127.0.0.1]/",
      "https://[64:ff9b::127.0.0.1]/",
      "https://[64:ff9b:1::a00:1]/",
    ]
  ) {
    await assert.rejects(checkWebhookUrl(url, false, resolve), /loopback, private/, url);
  }
  await checkWebhookUrl("https://ok.example./hook", false, resolve);
  await checkWebhookUrl("https://[64:ff9b::8.8.8.8]/hook", false, resolve);
});

Deno.test("url guard: every resolved address is checked; the deployment setting allows private ones", async () => {
  const resolve: Resolver = (host) =>
    Promise.resolve(
      ({
        "ok.example": ["93.184.216.34", "2606:2800:220:1::1"],
        "mixed.example": ["93.184.216.34", "10.1.2.3"],
        "v6loop.example": ["::1"],
      } as Record<string, string[]>)[host] ?? [],
    );
  await checkWebhookUrl("https://ok.example/hook", false, resolve);
  await assert.rejects(checkWebhookUrl("https://mixed.example/hook", false, resolve), /private/);
  await assert.rejects(checkWebhookUrl("https://v6loop.example/hook", false, resolve), /loopback/);
  await assert.rejects(checkWebhookUrl("https://nx.example/hook", false, resolve), /does not resolve/);
  await assert.rejects(checkWebhookUrl("https://[::1]:8443/", false, resolve), /loopback/);
  await assert.rejects(checkWebhookUrl("https://2130706433/", false, resolve), /loopback/); // 127.0.0.1
  await assert.rejects(checkWebhookUrl("https://metadata.google.internal/", false, resolve), /public host/);
  await assert.rejects(checkWebhookUrl("http://ok.example/", false, resolve), /https/);
  await assert.rejects(checkWebhookUrl("https://user:pw@ok.example/", false, resolve), /credentials/);
  await checkWebhookUrl("https://mixed.example/hook", true, resolve);
  await checkWebhookUrl("https://localhost:8443/hook", true, resolve);
});

Deno.test("url guard: creation refuses a blocked webhook_url with 400; delivery checks again (DNS rebinding)", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  // rebind.example answers a public address to its first lookup (the check at creation) and the metadata
  // address to every later one (the check at delivery), whenever the delivery happens.
  let rebindLookups = 0;
  const resolve: Resolver = (host) =>
    Promise.resolve(
      host === "rebind.example"
        ? [rebindLookups++ === 0 ? "93.184.216.34" : "169.254.169.254"]
        : host === "intra.example"
        ? ["192.168.0.10"]
        : [],
    );
  const fetched: string[] = [];
  const h = await createHarness({
    caCerts: [testTls.caPem],
    resolve,
    lifecycle: true,
    fetch: (input) => {
      fetched.push(String(input));
      return Promise.resolve(new Response(null, { status: 204 }));
    },
  });
  try {
    const key = await h.key("proj_ssrf");
    for (
      const url of [
        "https://127.0.0.1/hook",
        "https://[::1]/hook",
        "https://169.254.169.254/latest/meta-data",
        "https://localhost/hook",
        "https://intra.example/hook",
        "https://10.0.0.8/hook",
      ]
    ) {
      const res = await h.req("POST", "/v1/sessions", {
        key,
        body: engineBody(engine.url, { webhook_url: url }),
      });
      const body = checkErrorBody(res, { status: 400, code: "SVC_INVALID_REQUEST" });
      assert.match(String(body.message), /webhook_url/);
    }
    assert.equal(
      (await h.kv.get(["project", "proj_ssrf", "live_sessions"])).value ?? 0,
      0,
      "nothing created",
    );
    // public at creation, rebound to the metadata address before delivery: refused, never fetched
    const before = await h.req("POST", "/v1/sessions", {
      key,
      body: engineBody(engine.url, { webhook_url: "https://nx.example/hook" }), // does not resolve: accepted
    });
    assert.equal(before.status, 200, before.text);
    const res = await h.req("POST", "/v1/sessions", {
      key,
      body: engineBody(engine.url, { webhook_url: "https://rebind.example/hook" }),
    });
    assert.equal(res.status, 200, res.text);
    await eventually(
      async () => {
        const [e] = await listEvents(h.kv, "proj_ssrf", res.body.session_id);
        return e?.state === "refused";
      },
      DEADLINE_MS,
      "refused at delivery",
    );
    const [e] = await listEvents(h.kv, "proj_ssrf", res.body.session_id);
    assert.match(e.last_error!, /link-local/);
    // the unresolvable one is retried (transient), not refused
    await eventually(async () => {
      const [u] = await listEvents(h.kv, "proj_ssrf", before.body.session_id);
      return u?.attempts === 1;
    });
    const [u] = await listEvents(h.kv, "proj_ssrf", before.body.session_id);
    assert.equal(u.state, "pending");
    assert.match(u.last_error!, /does not resolve/);
    assert.deepEqual(fetched, [], "no request left the service");
  } finally {
    await h.close();
    await engine.close();
  }
});
