/**
 * The SDK in a browser: headless Chromium (the Debian package, never a downloaded build) loads `sdk/mod.js`
 * as a native ES module, with an import map for openapi-fetch, and drives a running service through a
 * same-origin page server. `crypto.randomUUID` is removed first, as on a page that is not a secure context,
 * so the generated Idempotency-Key must still work.
 */
import assert from "node:assert/strict";
import { CHROMIUM, launchChromium } from "../../testing/browser.ts";
import { installSdk } from "../../testing/npm_package.ts";
import { startTestService } from "../../testing/service.ts";

const PAGE = `<!doctype html>
<html><head><meta charset="utf-8">
<script type="importmap">{"imports": {"openapi-fetch": "/vendor/openapi-fetch.mjs"}}</script>
</head><body><script type="module">
delete Crypto.prototype.randomUUID;
const { ApiError, createClient } = await import("/sdk/mod.js");
const params = new URLSearchParams(location.hash.slice(1));
const client = createClient({ baseUrl: location.origin, apiKey: params.get("key"), retry: true });
const result = {};
try {
  const body = JSON.parse(params.get("body"));
  const created = await client.createSession(body);
  result.created = created.status;
  result.got = (await client.getSession(created.session_id)).status;
  result.token = (await client.createClientToken(created.session_id)).transport;
  const endedAnswer = await client.endSession(created.session_id, { force: true });
  result.ended = endedAnswer.status;
  if (endedAnswer.warning) result.warning = endedAnswer.warning;
  try {
    await client.endSession(created.session_id);
  } catch (err) {
    result.error = { instance: err instanceof ApiError, code: err.code, status: err.status, requestId: err.requestId };
  }
} catch (err) {
  result.unexpected = String(err && err.stack || err);
}
document.body.dataset.result = JSON.stringify(result);
</script></body></html>`;

Deno.test({
  name: "sdk in a browser: native ES modules in headless Chromium against a running service",
  ignore: !(await Deno.stat(CHROMIUM).then(() => true, () => false)),
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "sdk_browser_" });
    const svc = await startTestService();
    const sdkDir = new URL("../../sdk/", import.meta.url);
    const requests: string[] = [];
    try {
      await installSdk(dir);
      const vendor = await Deno.readTextFile(`${dir}/node_modules/openapi-fetch/dist/index.mjs`);
      const page = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
        const url = new URL(req.url);
        requests.push(url.pathname);
        const js = { headers: { "content-type": "text/javascript" } };
        if (url.pathname === "/") return new Response(PAGE, { headers: { "content-type": "text/html" } });
        if (url.pathname === "/vendor/openapi-fetch.mjs") return new Response(vendor, js);
        const file = /^\/sdk\/([a-z_]+\.js)$/.exec(url.pathname);
        if (file) return new Response(await Deno.readTextFile(new URL(file[1], sdkDir)), js);
        if (url.pathname.startsWith("/v1/")) {
          // the page's own origin forwards the API (as an app's backend or gateway would)
          return await fetch(`${svc.url}${url.pathname}${url.search}`, {
            method: req.method,
            headers: req.headers,
            body: req.body,
          });
        }
        return new Response("not found", { status: 404 });
      });
      const browser = await launchChromium();
      try {
        const tab = await browser.newPage();
        const errors: string[] = [];
        tab.on("pageerror", (e) => errors.push(String(e)));
        const hash = new URLSearchParams({
          key: await svc.key("proj_browser"),
          body: JSON.stringify(svc.engineBody()),
        });
        await tab.goto(`http://127.0.0.1:${page.addr.port}/#${hash}`);
        await tab.waitForFunction("document.body.dataset.result !== undefined", undefined, {
          timeout: 30_000,
        });
        const result = JSON.parse(await tab.evaluate("document.body.dataset.result") as string);
        assert.deepEqual(errors, []);
        assert.equal(result.unexpected, undefined, result.unexpected);
        assert.deepEqual({ ...result, error: { ...result.error, requestId: undefined } }, {
          created: "active",
          got: "active",
          token: "websocket_fmp4",
          ended: "ended",
          error: { instance: true, code: "SVC_SESSION_ENDED", status: 409, requestId: undefined },
        }, svc.logs.filter((l) => !l.includes('"msg":"request"')).join("\n"));
        assert.match(result.error.requestId, /^[0-9a-f-]{36}$/);
        assert.ok(requests.includes("/sdk/client.js") && requests.includes("/vendor/openapi-fetch.mjs"));
      } finally {
        await browser.close();
        await page.shutdown();
      }
    } finally {
      await svc.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
