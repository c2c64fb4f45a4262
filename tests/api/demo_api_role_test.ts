/**
 * The demo page in an API process (`SVC_ROLE=api`): served, offering the vendor engines only (no reference
 * engine runs there), and a request for the reference engine is refused with a clear message.
 */
import assert from "node:assert/strict";
import { compose } from "../../src/app/compose.ts";
import { loadConfig } from "../../src/config.ts";
import { silentLogger } from "../../src/log.ts";
import { TEST_TOKEN_SECRET } from "../../testing/harness.ts";

Deno.test("demo: an API process serves the page only when asked to, with the vendor engines only", async () => {
  const secrets = {
    SVC_INTERNAL_SECRET: "demo-internal-secret-0123456789abcdefghij",
    SVC_TOKEN_SECRET: TEST_TOKEN_SECRET,
  };
  assert.equal(loadConfig({ SVC_ROLE: "api", ...secrets }).demoPage, false, "off unless set");
  assert.equal(loadConfig({ SVC_ROLE: "api", ...secrets, SVC_DEMO_PAGE: "true" }).demoPage, true);
  const service = await compose(
    loadConfig({
      SVC_ROLE: "api",
      SVC_KV: ":memory:",
      SVC_INTERNAL_SECRET: "demo-internal-secret-0123456789abcdefghij",
      SVC_TOKEN_SECRET: TEST_TOKEN_SECRET,
      SVC_DEMO_PAGE: "true",
    }),
    { logger: silentLogger, listen: false, lifecycle: false },
  );
  try {
    const page = await (await service.fetch(new Request("http://svc.test/demo"))).text();
    assert.match(page, /<select id="engine">/);
    assert.doesNotMatch(page, /value="reference"/, "no reference engine in an API process");
    assert.match(page, /value="vendor1_realtime"/);
    const res = await service.fetch(
      new Request("http://svc.test/demo/api/sessions", {
        method: "POST",
        headers: { "content-type": "application/json", "x-demo": "1", "sec-fetch-site": "same-origin" },
        body: "{}",
      }),
    );
    assert.equal(res.status, 400);
    const body = await res.json();
    assert.equal(body.code, "SVC_INVALID_REQUEST");
    assert.match(body.message, /pick a vendor engine/);
  } finally {
    await service.dispose();
  }
});
