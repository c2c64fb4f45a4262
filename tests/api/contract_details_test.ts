/**
 * Contract details: URL fields are used as sent and refuse whitespace and controls; validation messages
 * never quote a provider type value (or a header name); every answer carrying a token, key or secret is
 * `Cache-Control: no-store`; API key names refuse characters that hide or reorder text.
 */
import assert from "node:assert/strict";
import { parseBootstrapInput } from "../../cli/bootstrap.ts";
import { PROVIDER_TYPES } from "../../src/providers/definitions/provider_types.ts";
import type { Resolver } from "../../src/webhooks/url_guard.ts";
import { FakeBridge } from "../../testing/fake_bridge.ts";
import { checkErrorBody, engineBody } from "../../testing/fixtures.ts";
import { createHarness } from "../../testing/harness.ts";

const ENGINE = "wss://engine.test/v0";
const SIGNED = "wss://api.elevenlabs.io/v1/convai/conversation?agent_id=a&conversation_signature=s";
const HOOK = "https://hooks.example/in";
const publicDns: Resolver = () => Promise.resolve(["93.184.216.34"]);

/** Ways to hide whitespace or a control character in an otherwise valid URL. */
function tainted(url: string): [string, string][] {
  const host = url.indexOf("/", url.indexOf("//") + 2);
  const at = (s: string) => url.slice(0, host) + s + url.slice(host);
  return [
    ["leading space", ` ${url}`],
    ["trailing space", `${url} `],
    ["leading tab", `\t${url}`],
    ["newline inside", at("\n")],
    ["CR LF at the end", `${url}\r\n`],
    ["space inside", at("/a b")],
    ["no-break space", `${url}\u00a0`],
    ["line separator", `${url}\u2028`],
    ["zero-width space", `\u200b${url}`],
    ["BOM", `\ufeff${url}`],
    ["DEL", at("\x7f")],
    ["C1 NEL", at("\u0085")],
    ["NUL", at("\0")],
  ];
}

Deno.test("URL fields: any whitespace or control character is refused (400), the valid URL is accepted as sent", async () => {
  const fake = new FakeBridge();
  const h = await createHarness({ bridges: { external_engine: fake }, resolve: publicDns });
  try {
    const key = await h.key("proj_a");
    const fields: [string, (u: string) => unknown, string, string][] = [
      ["external_engine.url", (u) => engineBody(u), ENGINE, "SVC_PROVIDER_MISCONFIGURED"],
      [
        "vendor3.signed_url",
        (u) => ({ provider_type: "vendor3", provider_config: { vendor3: { agent_id: "a", signed_url: u } } }),
        SIGNED,
        "SVC_PROVIDER_MISCONFIGURED",
      ],
      ["webhook_url", (u) => engineBody(ENGINE, { webhook_url: u }), HOOK, "SVC_INVALID_REQUEST"],
    ];
    for (const [field, body, valid, code] of fields) {
      for (const [label, url] of tainted(valid)) {
        const res = await h.req("POST", "/v1/sessions", { key, body: body(url) });
        try {
          checkErrorBody(res, { status: 400, code });
          assert.match(res.body.message, /whitespace or control characters/);
        } catch (e) {
          throw new Error(`${field}, ${label}: ${(e as Error).message}`);
        }
      }
    }
    // The valid values pass validation (the vendor3 engine is not available in this deployment: 503).
    const engine = await h.req("POST", "/v1/sessions", {
      key,
      body: engineBody(ENGINE, { webhook_url: HOOK }),
    });
    assert.equal(engine.status, 200, engine.text);
    const rec = await h.kv.get<{ webhook_url: string }>([
      "project",
      "proj_a",
      "session",
      engine.body.session_id,
    ]);
    assert.equal(rec.value?.webhook_url, HOOK);
    const vendor3 = await h.req("POST", "/v1/sessions", { key, body: fields[1][1](SIGNED) });
    checkErrorBody(vendor3, { status: 503, code: "SVC_PROVIDER_UNAVAILABLE", retryable: true });
  } finally {
    await h.close();
  }
});

/** Invalid create bodies touching every provider-related rule. */
function providerBodies(): unknown[] {
  const valid: Record<string, Record<string, unknown>> = {
    vendor1_realtime: { client_secret: "s" },
    vendor2: { access_token: "a", agent_id: "b" },
    external_engine: { url: ENGINE, auth_headers: {} },
    vendor3: { agent_id: "a" },
  };
  const bodies: unknown[] = [
    { provider_type: "vendor9", provider_config: {} },
    { provider_type: 5, provider_config: {} },
    { provider_type: "VENDOR2", provider_config: { vendor2: valid.vendor2 } },
    { provider_config: { vendor2: valid.vendor2 } },
    { provider_type: "vendor2" },
  ];
  for (const p of PROVIDER_TYPES) {
    bodies.push(
      { provider_type: p, provider_config: {} },
      { provider_type: p, provider_config: null },
      { provider_type: p, provider_config: "x" },
      { provider_type: p, provider_config: [] },
      { provider_type: p, provider_config: { [p]: null } },
      { provider_type: p, provider_config: { [p]: "x" } },
      { provider_type: p, provider_config: { [p]: {} } },
      { provider_type: p, provider_config: { [p]: { ...valid[p], extra: 1 } } },
      { provider_type: p, provider_config: { [p]: valid[p], unknown_key: {} } },
    );
    for (const field of Object.keys(valid[p])) {
      bodies.push(
        { provider_type: p, provider_config: { [p]: { ...valid[p], [field]: 7 } } },
        { provider_type: p, provider_config: { [p]: { ...valid[p], [field]: "" } } },
        { provider_type: p, provider_config: { [p]: { ...valid[p], [field]: "x".repeat(9000) } } },
      );
    }
    for (const q of PROVIDER_TYPES) {
      if (q !== p) {
        bodies.push(
          { provider_type: p, provider_config: { [q]: valid[q] } },
          { provider_type: p, provider_config: { [p]: valid[p], [q]: valid[q] } },
        );
      }
    }
  }
  bodies.push(
    engineBody("ws://engine.test/v0"),
    {
      provider_type: "vendor3",
      provider_config: { vendor3: { agent_id: "a", signed_url: "wss://evil.test/x" } },
    },
    engineBody(ENGINE, { transport: "carrier-pigeon" }),
    {
      provider_type: "external_engine",
      provider_config: { external_engine: { url: ENGINE, auth_headers: { "X-Secret-n4m3": 5 } } },
    },
    {
      provider_type: "external_engine",
      provider_config: { external_engine: { url: ENGINE, auth_headers: { "X-Secret-n4m3": "a\nb" } } },
    },
  );
  return bodies;
}

Deno.test("validation messages name fields, never a provider type value or a header name", async () => {
  const h = await createHarness({
    env: { SVC_RATE_LIMIT_PER_MINUTE: "1000000", SVC_RATE_LIMIT_BURST: "100000" },
  });
  try {
    const key = await h.key("proj_a");
    const providerType = new RegExp(PROVIDER_TYPES.join("|"));
    const messages = new Set<string>();
    for (const body of providerBodies()) {
      const res = await h.req("POST", "/v1/sessions", { key, body });
      assert.equal(res.status, 400, `${JSON.stringify(body).slice(0, 200)} → ${res.text}`);
      messages.add(res.body.message);
    }
    assert.ok(messages.size >= 10, `only ${messages.size} distinct messages`);
    for (const m of messages) {
      assert.doesNotMatch(m, providerType, m);
      assert.doesNotMatch(m, /n4m3/, m);
    }
  } finally {
    await h.close();
  }
});

Deno.test("Cache-Control: no-store on every answer carrying a token, a key or a secret (and every /v1 answer)", async () => {
  const h = await createHarness({ bridges: { external_engine: new FakeBridge() } });
  try {
    const key = await h.key("proj_a");
    const noStore = (res: { status: number; headers: Headers; text: string }, what: string) => {
      assert.ok(res.status < 500, `${what}: ${res.status} ${res.text}`);
      assert.equal(res.headers.get("cache-control"), "no-store", what);
    };
    const idem = { "Idempotency-Key": crypto.randomUUID() };
    const created = await h.req("POST", "/v1/sessions", { key, body: engineBody(ENGINE), headers: idem });
    assert.equal(created.status, 200, created.text);
    noStore(created, "create session");
    const replay = await h.req("POST", "/v1/sessions", { key, body: engineBody(ENGINE), headers: idem });
    assert.equal(replay.headers.get("idempotent-replayed"), "true");
    noStore(replay, "idempotent replay");
    const id = created.body.session_id;
    noStore(await h.req("POST", `/v1/sessions/${id}/client-token`, { key }), "client token");
    noStore(await h.req("GET", `/v1/sessions/${id}`, { key }), "get session");
    const newKey = await h.req("POST", "/v1/api-keys", {
      key,
      body: { name: "ci", scopes: ["sessions:read"] },
    });
    noStore(newKey, "create API key");
    noStore(await h.req("GET", "/v1/api-keys", { key }), "list API keys");
    noStore(await h.req("DELETE", `/v1/api-keys/${newKey.body.key_id}`, { key }), "revoke API key");
    noStore(await h.req("GET", "/v1/webhooks/secret", { key }), "webhook secret");
    noStore(await h.req("POST", "/v1/webhooks/secret/rotate", { key }), "rotate webhook secret");
    noStore(await h.req("GET", "/v1/catalog", { key }), "catalog");
    noStore(await h.req("POST", `/v1/sessions/${id}/end`, { key }), "end");
    noStore(await h.req("GET", "/v1/sessions/session:nope", { key }), "an error");
  } finally {
    await h.close();
  }
});

Deno.test("API key names: controls, bidi, zero-width, separators, BOM, lone surrogates and blank names are refused", async () => {
  const h = await createHarness();
  try {
    const key = await h.key("proj_a");
    const refused = [
      "",
      "x".repeat(129),
      "tab\there",
      "nul\0",
      "del\x7f",
      "c1\u0085nel",
      "csi\u009b31m",
      "evil\u202egnp.exe",
      "iso\u2066late\u2069",
      "alm\u061c",
      "lrm\u200e",
      "zero\u200bwidth",
      "zw\u200dj",
      "word\u2060joiner",
      "line\u2028sep",
      "para\u2029sep",
      "\ufeffbom",
      "lone \ud800 high",
      "lone \udc00 low",
      "   ",
      "\u3000",
      "\u00a0\u2003",
    ];
    for (const name of refused) {
      const res = await h.req("POST", "/v1/api-keys", { key, body: { name, scopes: ["sessions:read"] } });
      try {
        checkErrorBody(res, { status: 400, code: "SVC_INVALID_REQUEST" });
        assert.match(res.body.message, /^name: /);
      } catch (e) {
        throw new Error(`${JSON.stringify(name)}: ${(e as Error).message}`);
      }
      assert.throws(() => parseBootstrapInput({ project: "p", name: name || "\u202e" }), /--name/);
    }
    for (
      const name of ["CI deploy key", "clé de déploiement", "部署密钥", "🔑 prod", "❤️", "a", "x".repeat(128)]
    ) {
      const res = await h.req("POST", "/v1/api-keys", { key, body: { name, scopes: ["sessions:read"] } });
      assert.equal(res.status, 200, `${name}: ${res.text}`);
      assert.equal(res.body.name, name);
      assert.equal(parseBootstrapInput({ project: "p", name }).name, name);
    }
  } finally {
    await h.close();
  }
});
