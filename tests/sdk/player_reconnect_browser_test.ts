/**
 * A viewer whose connection drops while the avatar speaks (issue 33, "every connect"): the WebCodecs player
 * and the video-free (canvas) player reconnect and play the speech after the gap on its time — nothing of
 * it skipped as past, the mouth with its sound. In Debian's Chromium, on a strictly real-time engine
 * speaking bursts of "ah", and in Firefox ESR; the page drops the media socket and the app's `refreshToken`
 * answers after 800 ms, so the sound has a gap of about a second.
 *
 * Chromium's `AudioDecoder` stamps its outputs from its first input's timestamp on, counting the samples it
 * puts out: after the gap every output came a second early, and the players skipped all the sound after a
 * reconnection as past (the avatar silent, its mouth measured a second after its sound) until the sink
 * restarted the decoder at a gap (`soundFollows`, `sdk/player_webcodecs.js`).
 */
import assert from "node:assert/strict";
import { launchChromium } from "../../testing/browser.ts";
import { launchFirefox } from "../../testing/firefox.ts";
import { createClient, type CreatedSession } from "@avatar-svc/sdk";
import { loadConfig } from "../../src/config.ts";
import { createApiKey } from "../../src/kv/api_keys.ts";
import { silentLogger } from "../../src/log.ts";
import { compose as startService, openKv } from "../../src/app/compose.ts";
import { generateEngineTls } from "../../engine/mod.ts";
import { startRealtimeEngine } from "../../testing/realtime_engine.ts";
import { vowelBurst } from "../../bench/engine.ts";
// The worker side, loaded with this module rather than by compose()'s `await import()` during a test: its
// lip-sync module opens libespeak-ng when first imported, which the resource sanitizer would count as the
// test's own.
import "../../src/app/worker_side.ts";

/** Generous: the machine may be busy. */
const DEADLINE_MS = 60_000;
/** 400 ms of "ah" (espeak-ng, opened outside the test: the sanitizer would count the library as the test's). */
const pcm = vowelBurst(400);
/** How long the app's `refreshToken` takes to answer (ms): the sound's gap at the reconnection. */
const REFRESH_MS = 800;

interface Stats {
  skippedMs: number;
  speechSkippedMs: number;
  avOffsetMs: number | null;
  reconnects: number;
  audioDecodedMs: number;
}

/** What the test needs of a page, whichever browser driver (Playwright's Chromium, Puppeteer's Firefox). */
interface AnyPage {
  goto(url: string): Promise<unknown>;
  evaluate(script: string): Promise<unknown>;
}
interface AnyBrowser {
  page(): Promise<AnyPage>;
  close(): Promise<void>;
}

const BROWSERS: Record<string, () => Promise<AnyBrowser>> = {
  async Chromium() {
    const b = await launchChromium({ media: true });
    return {
      page: async () => {
        const page = await b.newPage();
        return { goto: (u) => page.goto(u), evaluate: (s) => page.evaluate(s) };
      },
      close: () => b.close(),
    };
  },
  async Firefox() {
    const b = await launchFirefox({ autoplay: "allowed" });
    return {
      page: async () => {
        const page = await b.newPage();
        return { goto: (u) => page.goto(u), evaluate: (s) => page.evaluate(s) };
      },
      close: () => b.close(),
    };
  },
};

/**
 * Page script: the player — on a `<video>` (WebCodecs) or a canvas (video-free) — its media sockets kept
 * (`globalThis.sockets`), its app's `refreshToken` answering with the next of `tokens` after `REFRESH_MS`.
 */
const PLAYER = (s: CreatedSession, kind: "video" | "canvas", tokens: string[]) =>
  `(async () => {
  const g = globalThis;
  const Base = g.WebSocket;
  g.sockets = [];
  g.WebSocket = class extends Base {
    constructor(...args) {
      super(...args);
      g.sockets.push(this);
    }
  };
  const tokens = ${JSON.stringify(tokens)};
  const { createPlayer } = await import("/sdk/player.js");
  const el = document.createElement(${JSON.stringify(kind)});
  el.width = 256;
  el.height = 256;
  document.body.append(el);
  g.player = createPlayer({
    ${kind}: el,
    streamMetadata: ${JSON.stringify(s.stream_metadata)},
    clientToken: ${JSON.stringify(s.client_token)},
    microphone: false,
    refreshToken: async () => {
      await new Promise((r) => setTimeout(r, ${REFRESH_MS}));
      return { clientToken: tokens.shift() };
    },
  });
})()`;

/** Polls `script` in the page until it is truthy. */
async function until(page: AnyPage, script: string, what: string): Promise<void> {
  const end = Date.now() + DEADLINE_MS;
  while (!(await page.evaluate(script))) {
    if (Date.now() > end) {
      const st = await page.evaluate(
        "JSON.stringify([globalThis.player?.state(), globalThis.player?.stats()])",
      );
      throw new Error(`timed out waiting for ${what}: ${st}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

const stats = async (page: AnyPage) => (await page.evaluate("globalThis.player.stats()")) as Stats;

for (const [name, launch] of Object.entries(BROWSERS)) {
  Deno.test(`players in ${name}: a reconnection while the avatar speaks — the sound after the gap plays on its time, the mouth with it (WebCodecs, canvas)`, async () => {
    const dir = await Deno.makeTempDir();
    const tls = await generateEngineTls();
    await Deno.writeTextFile(`${dir}/ca.pem`, tls.caPem);
    const config = loadConfig({
      PORT: "0",
      SVC_KV: `${dir}/svc.kv`,
      SVC_REFERENCE_ENGINE: "false",
      SVC_ENGINE_CA_FILE: `${dir}/ca.pem`,
      SVC_DEMO_PAGE: "false",
    });
    const service = await startService(config, { logger: silentLogger });
    const kv = await openKv(config.kv);
    const engine = startRealtimeEngine({ tls });
    const browsers: AnyBrowser[] = [];
    let sessionId: string | null = null;
    const { plaintext } = await createApiKey(kv, {
      projectId: "proj_player_reconnect",
      name: "backend",
      scopes: ["sessions:read", "sessions:write"],
      now: Date.now(),
      createdBy: "bootstrap",
    });
    const client = createClient({ baseUrl: service.url!, apiKey: plaintext });
    try {
      const s = await client.createSession({
        provider_type: "external_engine",
        provider_config: { external_engine: { url: engine.url, auth_headers: {} } },
      });
      sessionId = s.session_id;
      const connected = Date.now() + DEADLINE_MS;
      while (!engine.sessions.has(s.session_id)) {
        if (Date.now() > connected) throw new Error("timed out waiting for the engine's connection");
        await new Promise((r) => setTimeout(r, 100));
      }
      const pages = {} as Record<"video" | "canvas", AnyPage>;
      for (const kind of ["video", "canvas"] as const) {
        // (a browser each: a second tab of Firefox's puts the first in the background, where it draws nothing)
        const browser = await launch();
        browsers.push(browser);
        const page = await browser.page();
        await page.goto(`${service.url}/docs/errors`); // a page of the service: same origin as the player
        const fresh = [];
        for (let i = 0; i < 3; i++) fresh.push((await client.createClientToken(s.session_id)).client_token);
        await page.evaluate(PLAYER(s, kind, fresh));
        await until(page, 'globalThis.player.state().state === "playing"', `${kind}: playing`);
        pages[kind] = page;
      }
      const talking = engine.talk(s.session_id, { pcm, bursts: 18, gapMs: 600, spreadMs: 40 });
      talking.catch(() => {}); // (awaited below; a failure before that closes the engine)
      for (const [kind, page] of Object.entries(pages)) {
        await until(page, "globalThis.player.stats().avOffsetMs !== null", `${kind}: mouth vs sound`);
      }
      // The connections drop mid-speech; each player reconnects once its app has a fresh token.
      const before: Record<string, Stats> = {};
      for (const [kind, page] of Object.entries(pages)) {
        before[kind] = await stats(page);
        await page.evaluate('globalThis.sockets.at(-1).close(4000, "the network went away")');
      }
      for (const [kind, page] of Object.entries(pages)) {
        await until(
          page,
          `globalThis.player.stats().reconnects > ${
            before[kind].reconnects
          } && globalThis.player.state().state === "playing"`,
          `${kind}: playing again after the reconnection`,
        );
      }
      // Nine sound starts after it (the WebCodecs player's figure is the median of its last nine; the canvas
      // player's, of its pictures of the last 2 s).
      await talking;
      for (const [kind, page] of Object.entries(pages)) {
        const after = await stats(page);
        const b = before[kind];
        assert.ok(
          after.audioDecodedMs > b.audioDecodedMs + 5000,
          `${kind}: the speech after the gap decoded`,
        );
        // What went missing in the gap was never sent: it plays as silence. Skipped (past when it came): at most
        // the join burst's sound from before the reconnection, and none of the speech.
        assert.ok(
          after.skippedMs - b.skippedMs < 500,
          `${kind}: ${after.skippedMs - b.skippedMs} ms of sound skipped as past after the reconnection`,
        );
        assert.ok(
          after.speechSkippedMs - b.speechSkippedMs <= 100,
          `${kind}: ${after.speechSkippedMs - b.speechSkippedMs} ms of speech skipped after the reconnection`,
        );
        assert.ok(
          after.avOffsetMs !== null && Math.abs(after.avOffsetMs) < 80,
          `${kind}: the mouth ${after.avOffsetMs} ms off its sound after the reconnection`,
        );
      }
    } finally {
      for (const b of browsers) await b.close();
      if (sessionId) await client.endSession(sessionId, { force: true }).catch(() => {});
      await engine.close();
      kv.close();
      await service.close();
      await Deno.remove(dir, { recursive: true });
    }
  });
}
