/**
 * The SDK player's tool calls, in Debian's Chromium, on both transports. A page served with only the
 * files sdk/README.md says a page must serve (`player.js` and the modules it imports: `PLAYER_FILES` of the
 * service's own routes) creates a player on a media socket (or SFU signalling socket) of this test, which sends the fixed
 * `{"type":"tool_call",…}` messages and records the `{"type":"tool_result",…}` answers: a handler that returns
 * a value (or a promise) answers with it; `call.respond` answers in one line; a throw answers `is_error`
 * with its message; `player.respondToolCall` answers by id; each call is answered once.
 */
import assert from "node:assert/strict";
import type { Browser } from "playwright-core";
import { launchChromium } from "../../testing/browser.ts";
import { PLAYER_FILES } from "../../src/api/routes/demo.ts";

const DEADLINE_MS = 30_000;
// deno-lint-ignore no-explicit-any
declare const document: any;

/** The page server: the player's files, a blank page, and one WebSocket endpoint per transport. */
function startPageServer() {
  const received: { path: string; msg: Record<string, unknown> }[] = [];
  const sockets = new Set<WebSocket>();
  const files = PLAYER_FILES;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const url = new URL(req.url);
    const file = /^\/sdk\/([a-z_]+\.js)$/.exec(url.pathname)?.[1];
    if (file && files.includes(file)) {
      return new Response(await Deno.readFile(new URL(`../../sdk/${file}`, import.meta.url)), {
        headers: { "content-type": "text/javascript" },
      });
    }
    if (url.pathname === "/") {
      return new Response("<!doctype html><body></body>", { headers: { "content-type": "text/html" } });
    }
    if (url.pathname === "/media" || url.pathname === "/sfu") {
      const offered = (req.headers.get("sec-websocket-protocol") ?? "").split(",").map((p) => p.trim());
      const { socket, response } = Deno.upgradeWebSocket(req, { protocol: offered[0] });
      sockets.add(socket);
      socket.onclose = () => sockets.delete(socket);
      socket.onmessage = (e) => {
        if (typeof e.data === "string") received.push({ path: url.pathname, msg: JSON.parse(e.data) });
      };
      socket.onopen = () => {
        const call = (call_id: string, name: string, args: Record<string, unknown>) =>
          socket.send(JSON.stringify({ type: "tool_call", call_id, name, arguments: args }));
        call("c_return", "get_weather", { city: "Paris" });
        call("c_respond", "respond_inline", { n: 1 });
        call("c_throw", "broken", {});
        call("c_later", "answer_by_id", {});
        call("c_return", "get_weather", { city: "Paris" }); // a repeat: answered once only
      };
      return response;
    }
    return new Response("not found", { status: 404 });
  });
  return {
    origin: `http://127.0.0.1:${server.addr.port}`,
    received,
    async close() {
      for (const s of sockets) s.close();
      await server.shutdown();
    },
  };
}

Deno.test("sdk/README.md names every file a page serving the player must serve", async () => {
  const readme = await Deno.readTextFile(new URL("../../sdk/README.md", import.meta.url));
  const section = readme.slice(readme.indexOf("## Browser player"));
  for (const f of PLAYER_FILES) assert.ok(section.includes(`\`${f}\``), `sdk/README.md names ${f}`);
});

for (const transport of ["websocket_fmp4", "webrtc_sfu"] as const) {
  Deno.test(`sdk player (${transport}): tool calls reach onToolCall and are answered, once each, in every way the SDK offers`, async () => {
    const site = startPageServer();
    let browser: Browser | null = null;
    try {
      browser = await launchChromium({ media: true });
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(String(e)));
      await page.goto(site.origin);
      const ws = site.origin.replace("http", "ws");
      await page.evaluate(async ({ ws, transport }) => {
        const { createPlayer } = await import("/sdk/player.js");
        const video = document.createElement("video");
        video.muted = true;
        document.body.append(video);
        // deno-lint-ignore no-explicit-any
        const g = globalThis as any;
        g.calls = [];
        const placement = transport === "webrtc_sfu"
          ? { streamMetadata: { sfu_endpoint: `${ws}/sfu`, session_token: "tok", ice_servers: [] } }
          : { mediaUrl: `${ws}/media` };
        g.player = createPlayer({
          video,
          clientToken: "tok",
          microphone: false,
          ...placement,
          // deno-lint-ignore no-explicit-any
          onToolCall: (call: any) => {
            g.calls.push({ callId: call.callId, name: call.name, arguments: call.arguments });
            if (call.name === "get_weather") {
              return Promise.resolve({ city: call.arguments.city, temp_c: 21 });
            }
            if (call.name === "respond_inline") return void call.respond(call.arguments.n + 1);
            if (call.name === "broken") throw new Error("the tool broke");
            setTimeout(() => g.player.respondToolCall(call.callId, "by id", { isError: false }), 50);
          },
        });
      }, { ws, transport });
      const path = transport === "webrtc_sfu" ? "/sfu" : "/media";
      const results = () => site.received.filter((r) => r.path === path && r.msg.type === "tool_result");
      const deadline = Date.now() + DEADLINE_MS;
      while (results().length < 4 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, 300)); // nothing more comes
      const byId = Object.fromEntries(results().map((r) => [r.msg.call_id, r.msg]));
      assert.equal(results().length, 4, JSON.stringify(results()));
      assert.deepEqual(byId.c_return, {
        type: "tool_result",
        call_id: "c_return",
        output: { city: "Paris", temp_c: 21 },
      });
      assert.deepEqual(byId.c_respond, { type: "tool_result", call_id: "c_respond", output: 2 });
      assert.deepEqual(byId.c_throw, {
        type: "tool_result",
        call_id: "c_throw",
        output: "the tool broke",
        is_error: true,
      });
      assert.deepEqual(byId.c_later, { type: "tool_result", call_id: "c_later", output: "by id" });
      const calls = await page.evaluate("globalThis.calls") as { name: string; arguments: unknown }[];
      assert.deepEqual(calls[0], { callId: "c_return", name: "get_weather", arguments: { city: "Paris" } });
      assert.deepEqual(errors, [], "no page error (the files sdk/README.md names are all a page needs)");
      await page.evaluate("globalThis.player.close()");
    } finally {
      await browser?.close();
      await site.close();
    }
  });
}
