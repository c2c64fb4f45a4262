/**
 * The SDK's `websocket_fmp4` player (`sdk/player.js`) at the end of a session whose close frame never
 * arrives, in Debian's Chromium against a scripted media server.
 *
 * The service ends a session with `{"type":"ended"}` and then a close (1000, or 1011 after a media
 * failure). That close can be lost: Deno drops the connection when a client frame (the microphone, every
 * 20 ms) crosses its close frame, and a drop with that frame unread is a TCP reset that can beat the close
 * frame to the page (1006). A full `bash .ci/run` at load 5–10 saw the demo page's player end `failed`
 * for a session that ended cleanly: it took the 1006 for a dropped connection, reconnected and found the
 * session gone. After `ended`, the close that follows is final, whatever its code.
 */
import assert from "node:assert/strict";
import { launchChromium } from "../../testing/browser.ts";

/** Generous: the machine may be busy. */
const DEADLINE_MS = 30_000;
const SDK = new URL("../../sdk/", import.meta.url);

/** One WebSocket text frame (server → client: unmasked). */
function textFrame(text: string): Uint8Array {
  const payload = new TextEncoder().encode(text);
  const head = payload.length < 126
    ? [0x81, payload.length]
    : [0x81, 126, payload.length >> 8, payload.length & 255];
  const frame = new Uint8Array(head.length + payload.length);
  frame.set(head);
  frame.set(payload, head.length);
  return frame;
}

/** A close frame with `code`. */
function closeFrame(code: number): Uint8Array {
  return new Uint8Array([0x88, 2, code >> 8, code & 255]);
}

/** Reads an HTTP request's head from `conn`. */
async function readHead(conn: Deno.Conn): Promise<string> {
  const buf = new Uint8Array(8192);
  let head = "";
  while (!head.includes("\r\n\r\n")) {
    const n = await conn.read(buf);
    if (n === null) throw new Error("the client went away during the handshake");
    head += new TextDecoder().decode(buf.subarray(0, n));
  }
  return head;
}

/**
 * A media server on a raw socket, so that it can end a connection without a close frame. The first
 * connection gets the hello, `{"type":"ended","reason":endReason}` and then a bare TCP close (the page sees
 * 1006); any later one (a reconnection) is refused with 4404, as the service refuses a session that is gone.
 */
function scriptedMediaServer(endReason: string) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let connections = 0;
  const serving = (async () => {
    for await (const conn of listener) {
      connections++;
      const first = connections === 1;
      try {
        const head = await readHead(conn);
        const key = head.match(/sec-websocket-key:\s*(\S+)/i)?.[1] ?? "";
        const digest = await crypto.subtle.digest(
          "SHA-1",
          new TextEncoder().encode(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"),
        );
        const accept = btoa(String.fromCharCode(...new Uint8Array(digest)));
        await conn.write(new TextEncoder().encode(
          "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
            `Sec-WebSocket-Accept: ${accept}\r\nSec-WebSocket-Protocol: avatar-media.v0\r\n\r\n`,
        ));
        if (first) {
          await conn.write(textFrame(JSON.stringify({
            type: "hello",
            session_id: "session:scripted",
            mime: 'video/mp4; codecs="avc1.42c01e, opus"',
            video: { width: 512, height: 512, fps: 25 },
            input_sample_rate: 24000,
            timeline_ms: 0,
            framing: "fmp4",
          })));
          await conn.write(textFrame(JSON.stringify({ type: "ended", reason: endReason })));
        } else {
          await conn.write(closeFrame(4404));
        }
      } catch { /* the page went away */ }
      // No close frame on the first connection: the page sees the connection drop (1006).
      conn.close();
    }
  })();
  return {
    url: `ws://127.0.0.1:${(listener.addr as Deno.NetAddr).port}/v1/sessions/scripted/media`,
    get connections() {
      return connections;
    },
    async close() {
      listener.close();
      await serving.catch(() => {});
    },
  };
}

/** Serves a blank page and the SDK's modules (same origin, so `/sdk/player.js` imports). */
function pageServer() {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const path = new URL(req.url).pathname;
    const m = path.match(/^\/sdk\/([a-z_]+\.js)$/);
    if (m) {
      return new Response(await Deno.readFile(new URL(m[1], SDK)), {
        headers: { "content-type": "text/javascript" },
      });
    }
    return new Response("<!doctype html><video muted playsinline></video>", {
      headers: { "content-type": "text/html" },
    });
  });
  return { url: `http://127.0.0.1:${server.addr.port}/`, close: () => server.shutdown() };
}

for (
  const [endReason, expected] of [
    ["session_ended", { state: "ended", reason: "session_ended" }],
    ["render_failed", { state: "failed", reason: "render_failed" }],
  ] as const
) {
  Deno.test(`sdk player: after {"type":"ended","reason":"${endReason}"} a connection that drops without its close frame ends it ${expected.state}, with no reconnection`, async () => {
    const media = scriptedMediaServer(endReason);
    const pages = pageServer();
    const browser = await launchChromium({ media: true });
    try {
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(String(e)));
      await page.goto(pages.url);
      await page.evaluate(`(async () => {
        const { createPlayer } = await import("/sdk/player.js");
        globalThis.states = [];
        globalThis.refreshes = 0;
        globalThis.player = createPlayer({
          video: document.querySelector("video"),
          mediaUrl: ${JSON.stringify(media.url)},
          clientToken: "scripted-token",
          microphone: false,
          refreshToken: async () => {
            globalThis.refreshes++;
            return { clientToken: "scripted-token-2" };
          },
          onState: (s) => globalThis.states.push(s),
        });
      })()`);
      await page.waitForFunction(
        `globalThis.player.state().state === "ended" || globalThis.player.state().state === "failed"`,
        undefined,
        { timeout: DEADLINE_MS },
      );
      const state = await page.evaluate(`globalThis.player.state()`) as {
        state: string;
        reason?: string;
        closeCode?: number;
      };
      const states = await page.evaluate(`globalThis.states.map((s) => s.state)`) as string[];
      assert.equal(
        state.state,
        expected.state,
        `states: ${states.join(" → ")}; last: ${JSON.stringify(state)}`,
      );
      assert.equal(state.reason, expected.reason);
      assert.equal(state.closeCode, 1006, "the close the page saw");
      assert.ok(!states.includes("reconnecting"), `no reconnection: ${states.join(" → ")}`);
      assert.equal(await page.evaluate(`globalThis.refreshes`), 0, "no fresh token asked for");
      assert.equal(media.connections, 1, "one connection");
      assert.deepEqual(errors, []);
    } finally {
      await browser.close();
      await pages.close();
      await media.close();
    }
  });
}
