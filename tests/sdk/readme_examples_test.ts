/**
 * The examples a frontend developer follows run as written: the files `sdk/README.md` and
 * `docs/media-plane.md` show (`<!-- file: … -->` blocks) are written to an app folder with the SDK
 * installed as its `package.json` says (laid out offline from Deno's npm cache), the backend runs with
 * `deno run`, and headless Chromium opens its page against a running service: the avatar plays, and the
 * End button ends the session. The webhook handler verifies a delivery signed with the project's secret.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { createClient } from "@avatar-svc/sdk";
import { launchChromium } from "../../testing/browser.ts";
import { baseEnv } from "../../testing/cli.ts";
import { exampleFiles } from "../../testing/markdown.ts";
import { installSdk } from "../../testing/npm_package.ts";
import { startTestService } from "../../testing/service.ts";
import { webhookHeaders } from "../../src/webhooks/sign.ts";

const README = await Deno.readTextFile(new URL("../../sdk/README.md", import.meta.url));
const MEDIA_PLANE = await Deno.readTextFile(new URL("../../docs/media-plane.md", import.meta.url));
/** Generous: the machine may be busy. */
const DEADLINE_MS = 30_000;

/** A free port on 127.0.0.1 (for the backend, which takes its port from PORT). */
function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/** Polls `check` every 100 ms; throws with `what` after the deadline. */
async function until(check: () => Promise<boolean> | boolean, what: string): Promise<void> {
  const deadline = Date.now() + DEADLINE_MS;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Waits until the page's `<video>` really plays: not paused, its clock and decoded frames moving on. */
async function playsOn(page: Page): Promise<void> {
  const at = await page.evaluate(`(() => {
    const v = document.querySelector("video");
    return { time: v.currentTime, frames: v.getVideoPlaybackQuality().totalVideoFrames };
  })()`) as { time: number; frames: number };
  await page.waitForFunction(
    (a: { time: number; frames: number }) => {
      // deno-lint-ignore no-explicit-any
      const v = (globalThis as any).document.querySelector("video");
      return !v.paused && v.currentTime > a.time + 0.5 &&
        v.getVideoPlaybackQuality().totalVideoFrames > a.frames;
    },
    at,
    { timeout: DEADLINE_MS },
  );
}

Deno.test("sdk README: the example files are all there", () => {
  assert.deepEqual([...exampleFiles(README).keys()].sort(), [
    "app.js",
    "backend.ts",
    "index.html",
    "package.json",
    "webhook.ts",
  ]);
  assert.deepEqual([...exampleFiles(MEDIA_PLANE).keys()], ["player-example.js"]);
});

Deno.test("sdk README: the backend and its page run as written; the avatar plays in Chromium", async () => {
  const svc = await startTestService();
  const dir = await Deno.makeTempDir({ prefix: "sdk_example_" });
  let backend: Deno.ChildProcess | null = null;
  let backendStderr: Promise<void> | null = null;
  try {
    for (const [name, text] of exampleFiles(README)) await Deno.writeTextFile(`${dir}/${name}`, text);
    await installSdk(dir); // what `npm install` does with the example's package.json, offline
    const apiKey = await svc.key("proj_example");
    const port = freePort();
    backend = new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-net", "--allow-env", "--allow-read", "backend.ts"],
      cwd: dir,
      clearEnv: true,
      env: {
        ...baseEnv(),
        NO_COLOR: "1",
        SVC_API_URL: svc.url,
        SVC_API_KEY: apiKey,
        ENGINE_URL: svc.engine.url,
        ENGINE_TOKEN: svc.engine.token,
        PORT: String(port),
      },
      stdout: "null",
      stderr: "piped",
    }).spawn();
    let backendLog = "";
    backendStderr = (async () => {
      for await (const chunk of backend.stderr.pipeThrough(new TextDecoderStream())) backendLog += chunk;
    })();
    const origin = `http://127.0.0.1:${port}`;
    await until(
      () => fetch(origin).then(async (r) => (await r.body?.cancel(), r.ok), () => false),
      "the example backend to serve its page",
    ).catch((err) => {
      throw new Error(`${err.message}; its output:\n${backendLog}`);
    });

    const browser = await launchChromium({ media: true });
    try {
      // The README's page, as written.
      const page = await browser.newPage();
      const errors: string[] = [];
      const failed: string[] = [];
      page.on("pageerror", (e) => errors.push(String(e)));
      const started: Promise<string> = new Promise((resolve) =>
        page.on("response", (r) => {
          if (r.status() >= 400 && !r.url().endsWith("/favicon.ico")) failed.push(`${r.status()} ${r.url()}`);
          if (r.url() === `${origin}/avatar-session`) r.json().then((b) => resolve(b.session_id), () => {});
        })
      );
      await page.goto(origin);
      await page.waitForFunction(`document.querySelector("#state").textContent === "playing"`, undefined, {
        timeout: DEADLINE_MS,
      }).catch(async (err) => {
        throw new Error(`${err}: the page says ${await page.textContent("#state")}`);
      });
      await playsOn(page);

      // docs/media-plane.md's script in the same page, in place of app.js.
      const other = await browser.newPage();
      const logged: string[] = [];
      other.on("console", (m) => logged.push(m.text()));
      other.on("pageerror", (e) => errors.push(String(e)));
      await other.route("**/app.js", (route) =>
        route.fulfill({
          body: exampleFiles(MEDIA_PLANE).get("player-example.js")!,
          contentType: "text/javascript",
        }));
      await other.goto(origin);
      await until(
        () => logged.some((l) => l.startsWith("playing ")),
        "the media-plane example to play",
      );
      await playsOn(other);
      await until(() => logged.some((l) => l.startsWith("stats {")), "its stats line");

      // The README page's End button ends its session through the backend.
      const api = createClient({ baseUrl: svc.url, apiKey });
      const sessionId = await started;
      assert.equal((await api.getSession(sessionId)).status, "active");
      await page.click("#end");
      await page.waitForFunction(`document.querySelector("#state").textContent === "ended"`, undefined, {
        timeout: DEADLINE_MS,
      });
      // (the player sees the stream end while the end call is still finishing)
      await until(async () => (await api.getSession(sessionId)).status !== "ending", "the end to complete");
      const ended = await api.getSession(sessionId);
      assert.deepEqual([ended.status, ended.end_reason], ["ended", "ended_by_api"]);
      await other.click("#end");
      await until(() => logged.some((l) => l.startsWith("ended ")), "the media-plane example to end");
      assert.deepEqual(errors, []);
      assert.deepEqual(failed, []);
      assert.ok(!svc.logs.join("\n").includes(apiKey), "the API key is never logged");
    } finally {
      await browser.close();
    }
  } finally {
    if (backend) {
      try {
        backend.kill();
      } catch { /* it had stopped */ }
      await backend.status;
      await backendStderr;
    }
    await svc.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("sdk README: the webhook handler accepts a delivery signed with the project's secret, as written", async () => {
  const svc = await startTestService();
  const dir = await Deno.makeTempDir({ prefix: "sdk_webhook_" });
  try {
    const files = exampleFiles(README);
    await Deno.writeTextFile(`${dir}/package.json`, files.get("package.json")!);
    await Deno.writeTextFile(`${dir}/webhook.ts`, files.get("webhook.ts")!);
    await installSdk(dir);
    // The project's secrets, before and after a rotation, from the API.
    const api = createClient({ baseUrl: svc.url, apiKey: await svc.key("proj_webhook") });
    const old = (await api.getWebhookSecret()).secret;
    const current = (await api.rotateWebhookSecret()).secret;
    const body = JSON.stringify({
      type: "session.ended",
      timestamp: new Date().toISOString(),
      data: { session_id: "session:AAAAAAAAAAAAAAAAAAAAAA" },
    });
    const now = Math.floor(Date.now() / 1000);
    const deliveries = {
      // the service's own signing, as during the rotation's grace period: both secrets
      rotating: await webhookHeaders([current, old], "msg_1", now, body),
      current: await webhookHeaders([current], "msg_2", now, body),
      forged: await webhookHeaders(["whsec_" + btoa("x".repeat(32))], "msg_3", now, body),
      stale: await webhookHeaders([current], "msg_4", now - 3600, body),
    };
    await Deno.writeTextFile(
      `${dir}/driver.ts`,
      `import { handleWebhook } from "./webhook.ts";
const deliveries = ${JSON.stringify(deliveries)};
const body = ${JSON.stringify(body)};
const statuses: Record<string, number> = {};
for (const [name, headers] of Object.entries(deliveries)) {
  const res = await handleWebhook(new Request("http://127.0.0.1/hooks", { method: "POST", headers, body }));
  statuses[name] = res.status;
}
console.log(JSON.stringify(statuses));
`,
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-env", "driver.ts"],
      cwd: dir,
      clearEnv: true,
      env: { ...baseEnv(), NO_COLOR: "1", WEBHOOK_SECRETS: `${current},${old}` },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stdout = new TextDecoder().decode(out.stdout);
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    const lines = stdout.trim().split("\n");
    assert.deepEqual(JSON.parse(lines.at(-1)!), { rotating: 204, current: 204, forged: 400, stale: 400 });
    assert.ok(lines.includes("msg_1 session.ended session:AAAAAAAAAAAAAAAAAAAAAA"), stdout);
  } finally {
    await svc.close();
    await Deno.remove(dir, { recursive: true });
  }
});
