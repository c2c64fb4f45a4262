/**
 * The interactive API reference (`/docs`) renders in a browser with every request kept on the service:
 * no CDN, no validator badge, nothing fetched from elsewhere.
 */
import assert from "node:assert/strict";
import { launchChromium } from "../../testing/browser.ts";
import { createHarness } from "../../testing/harness.ts";

// deno-lint-ignore no-explicit-any
declare const document: any;

Deno.test("docs: /docs renders the reference offline, from the service alone", async () => {
  const h = await createHarness();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, h.fetch);
  const origin = `http://127.0.0.1:${server.addr.port}`;
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    const elsewhere: string[] = [];
    await page.route("**/*", (route) => {
      const url = route.request().url();
      if (url.startsWith(origin) || url.startsWith("data:")) return route.continue();
      elsewhere.push(url);
      return route.abort();
    });
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(`${origin}/docs`);
    await page.waitForFunction(() => document.querySelectorAll(".opblock").length >= 7, undefined, {
      timeout: 30_000,
    });
    const ops: string[] = await page.evaluate(() =>
      [...document.querySelectorAll(".opblock-summary-path")].map((e: { textContent: string }) =>
        e.textContent.replace(/\u200b/g, "").trim()
      )
    );
    for (const path of ["/v1/api-keys", "/v1/sessions", "/v1/sessions/{session_id}/client-token"]) {
      assert.ok(ops.includes(path), `${path} listed: ${ops.join(", ")}`);
    }
    assert.deepEqual(elsewhere, [], "nothing was requested outside the service");
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
    await server.shutdown();
    await h.close();
  }
});
