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
 *
 * The page is also busy for 150 ms when the reconnection's first message comes (as a page often is: the
 * reconnection's own work, a loaded machine). The players took what followed as a stall's backlog and skipped
 * it as past, up to 160 ms of the speech (the canvas player 120–160), until a reconnection settled anew (its sound raised for as at the
 * start-up) and the raise was judged where the worklet plays once it has taken it (`toldNow`): 0–20 ms.
 */
import assert from "node:assert/strict";
import type { CreatedSession } from "@avatar-svc/sdk";
import { type AnyBrowser, type AnyPage, chromium, firefox, until } from "../../testing/any_browser.ts";
import { withRealtimeService } from "../../testing/realtime_service.ts";
import { vowelBurst } from "../../bench/engine.ts";

/** Generous: the machine may be busy. */
const DEADLINE_MS = 60_000;
/** 400 ms of "ah" (espeak-ng, opened outside the test: the sanitizer would count the library as the test's). */
const pcm = vowelBurst(400);
/** How long the app's `refreshToken` takes to answer (ms): the sound's gap at the reconnection. */
const REFRESH_MS = 800;
/** How long the page is busy when the reconnection's first message comes (ms; see `PLAYER`). */
const BUSY_MS = 150;

interface Stats {
  skippedMs: number;
  speechSkippedMs: number;
  avOffsetMs: number | null;
  reconnects: number;
  audioDecodedMs: number;
}

const BROWSERS: Record<string, () => Promise<AnyBrowser>> = {
  Chromium: () => chromium(),
  Firefox: () => firefox({ autoplay: "allowed" }),
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
      // A page busy when the reconnection's media come (\`busyNext\` ms of its main thread at the first message).
      const busy = g.busyNext;
      g.busyNext = 0;
      if (busy) {
        this.addEventListener("message", () => {
          const end = performance.now() + busy;
          while (performance.now() < end);
        }, { once: true });
      }
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

/**
 * Page script: from now on, every 20 ms, a read of the player (`globalThis.timeline`, at most 3,000): page ms
 * since the start, its anchor, sound skipped in all and of speech, audio decoded (ms), reconnections, sound
 * played as silence (ms), stalls.
 */
const TIMELINE = `(() => {
  const g = globalThis;
  g.timeline = [];
  const t0 = performance.now();
  setInterval(() => {
    const s = g.player.stats();
    if (g.timeline.length < 3000) {
      g.timeline.push([Math.round(performance.now() - t0), s.anchorMs, Math.round(s.skippedMs),
        Math.round(s.speechSkippedMs), Math.round(s.audioDecodedMs ?? 0), s.reconnects, s.audioUnderrunMs,
        s.stalls]);
    }
  }, 20);
})()`;
type Read = [number, number | null, number, number, number, number, number, number];

/** The reads where column `c` grew, each with the two before it (where the anchor stood), at most 60. */
const grew = (reads: Read[], c: 2 | 3) =>
  reads.flatMap((r, i) => i > 0 && r[c] > reads[i - 1][c] ? reads.slice(Math.max(0, i - 2), i + 1) : [])
    .filter((r, i, all) => all.indexOf(r) === i).slice(0, 60);

/** What the columns of a read are (for a failure's message). */
const READ_COLUMNS = "ms, anchor, skipped, of speech, decoded, reconnects, played as silence, stalls";

/** How much of the decoded sound after the reconnection its speech check covers (ms). */
const AFTER_MS = 3000;

const stats = async (page: AnyPage) => (await page.evaluate("globalThis.player.stats()")) as Stats;

for (const [name, launch] of Object.entries(BROWSERS)) {
  Deno.test(`players in ${name}: a reconnection while the avatar speaks — the sound after the gap plays on its time, the mouth with it (WebCodecs, canvas)`, async () => {
    await withRealtimeService("proj_player_reconnect", async ({ service, client, engine, session }) => {
      const browsers: AnyBrowser[] = [];
      try {
        const s = await session({ deadlineMs: DEADLINE_MS });
        const pages = {} as Record<"video" | "canvas", AnyPage>;
        const pageErrors: Record<string, string[]> = {};
        for (const kind of ["video", "canvas"] as const) {
          // (a browser each: a second tab of Firefox's puts the first in the background, where it draws nothing)
          const browser = await launch();
          browsers.push(browser);
          const { page, errors } = await browser.page();
          pageErrors[kind] = errors;
          await page.goto(`${service.url}/docs/errors`); // a page of the service: same origin as the player
          const fresh = [];
          for (let i = 0; i < 3; i++) fresh.push((await client.createClientToken(s.session_id)).client_token);
          await page.evaluate(PLAYER(s, kind, fresh));
          await until(page, 'globalThis.player.state().state === "playing"', `${kind}: playing`, DEADLINE_MS);
          pages[kind] = page;
        }
        const talking = engine.talk(s.session_id, { pcm, bursts: 18, gapMs: 600, spreadMs: 40 });
        talking.catch(() => {}); // (awaited below; a failure before that closes the engine)
        for (const [kind, page] of Object.entries(pages)) {
          await until(
            page,
            "globalThis.player.stats().avOffsetMs !== null",
            `${kind}: mouth vs sound`,
            DEADLINE_MS,
          );
        }
        // The connections drop mid-speech; each player reconnects once its app has a fresh token.
        const before: Record<string, Stats> = {};
        for (const [kind, page] of Object.entries(pages)) {
          before[kind] = await stats(page);
          await page.evaluate(TIMELINE);
          await page.evaluate(`globalThis.busyNext = ${BUSY_MS}`);
          await page.evaluate('globalThis.sockets.at(-1).close(4000, "the network went away")');
        }
        for (const [kind, page] of Object.entries(pages)) {
          await until(
            page,
            `globalThis.player.stats().reconnects > ${
              before[kind].reconnects
            } && globalThis.player.state().state === "playing"`,
            `${kind}: playing again after the reconnection`,
            DEADLINE_MS,
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
          // What went missing in the gap was never sent: it plays as silence. Skipped (past when it came): none
          // of the speech in the reconnection's first 3 s of sound, where it settles and its anchor, raised for
          // the busy page, comes back down (in the pauses). Later, a page starved of its core skips what it
          // decodes too late, reconnection or not (7 Dec: the browser tests three at a time beside a CPU hog
          // skipped speech 20–60 ms at a time from 8.6 s after it; a CI run of that day, two at a time, found
          // 336 ms of speech skipped in the whole run, where not recorded): the whole run's bound below. (A CI
          // run of 8 Dec found 392 ms inside the 3 s: the anchor raised to 345 ms behind fell to 53 at once, in
          // a word; a fall from far behind now goes into decoded quiet sound — `lowerBy`.)
          const timeline = await page.evaluate("globalThis.timeline") as Read[];
          const back = timeline.findIndex((r) => r[5] > b.reconnects);
          assert.ok(back >= 0, `${kind}: the reconnection seen in the page's reads`);
          const end = timeline.findIndex((r, i) => i >= back && r[4] >= timeline[back][4] + AFTER_MS);
          const window = timeline.slice(0, end < 0 ? timeline.length : end + 1);
          const speech = window.at(-1)![3] - b.speechSkippedMs;
          const skipped = after.skippedMs - b.skippedMs;
          assert.ok(
            speech <= 100,
            `${kind}: ${speech} ms of speech skipped in the ${AFTER_MS} ms of sound after the reconnection (${
              after.speechSkippedMs - b.speechSkippedMs
            } in the whole run, ${skipped} of sound); reads where it grew (and the two before; ${READ_COLUMNS}): ${
              JSON.stringify(grew(window, 3))
            }`,
          );
          // Skipped in all, speech or silence: far from all of the 16 s after the gap, as before 7 Dec's
          // decoder restart. Alone, under 400 ms; with the browser tests two at a time on 2 cores, up to 1,089
          // ms (the canvas player, 7 Dec).
          assert.ok(
            skipped < 4000,
            `${kind}: ${skipped} ms of sound skipped as past after the reconnection; reads where it grew (${READ_COLUMNS}): ${
              JSON.stringify(grew(timeline, 2))
            }`,
          );
          assert.ok(
            after.avOffsetMs !== null && Math.abs(after.avOffsetMs) < 80,
            `${kind}: the mouth ${after.avOffsetMs} ms off its sound after the reconnection`,
          );
          assert.deepEqual(pageErrors[kind], [], `${kind}: errors in the page`);
        }
      } finally {
        for (const b of browsers) await b.close();
      }
    });
  });
}
