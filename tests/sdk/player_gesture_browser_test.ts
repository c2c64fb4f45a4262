/**
 * Both SDK players — WebCodecs video and video-free (canvas) — as a user's browser runs them: no autoplay
 * flag, so the sound waits for the user's Start click; in Debian's Chromium and in Debian's Firefox ESR (the
 * second browser engine, through WebDriver BiDi with `puppeteer-core`). On a strictly real-time engine
 * speaking bursts of "ah" after the click, each player shows its first picture before any click, is not
 * muted after it, plays the sound (its audio clock runs), and the mouth moves in step with it: the player
 * measures mouth vs sound (which needs the sound heard and an opening mouth shown).
 */
import assert from "node:assert/strict";
import type { CreatedSession } from "@avatar-svc/sdk";
import {
  type AnyBrowser,
  chromium as anyChromium,
  firefox,
  until as untilIn,
} from "../../testing/any_browser.ts";
import { withRealtimeService } from "../../testing/realtime_service.ts";
import { vowelBurst } from "../../bench/engine.ts";

/** Generous: the machine may be busy. */
const DEADLINE_MS = 60_000;
/** 400 ms of "ah" (espeak-ng, opened outside the test: the sanitizer would count the library as the test's). */
const pcm = vowelBurst(400);

/** Chromium as a user's browser runs it: no autoplay flag (Chromium's own rule for the sound). */
const chromium = () => anyChromium({ autoplay: "gesture" });

/**
 * Page script: the page's audio held as Firefox on a sound device holds it (and as headless browsers here do
 * not) — an `AudioContext` made before the user's first gesture is suspended, and `resume()` works only after
 * one. The gesture is a trusted pointer or key event (Playwright's `evaluate` runs as a user gesture, so the
 * browser's own user activation cannot tell).
 */
const HOLD_SOUND = `(() => {
  let gestured = false;
  for (const t of ["pointerdown", "keydown", "click"]) {
    addEventListener(t, (e) => { if (e.isTrusted) gestured = true; }, true);
  }
  const AC = globalThis.AudioContext;
  const state = Object.getOwnPropertyDescriptor(BaseAudioContext.prototype, "state").get;
  const resume = AC.prototype.resume;
  const held = new WeakSet();
  Object.defineProperty(AC.prototype, "state", {
    configurable: true,
    get() { return held.has(this) ? "suspended" : state.call(this); },
  });
  AC.prototype.resume = function () {
    if (!gestured) return Promise.resolve();
    held.delete(this);
    return resume.call(this);
  };
  globalThis.AudioContext = class extends AC {
    constructor(o) { super(o); if (!gestured) held.add(this); }
  };
})()`;

/**
 * Page script: the page's sound starts slowly, as Firefox's did on a PulseAudio sink (its audio device opened
 * 0.9–2.2 s after the page made its context): an AudioWorklet module loads 4 s late. `soundLoaded` says when
 * one has.
 */
const SLOW_SOUND = `(() => {
  const addModule = AudioWorklet.prototype.addModule;
  globalThis.soundLoaded = false;
  AudioWorklet.prototype.addModule = async function (...a) {
    await new Promise((r) => setTimeout(r, 4000));
    await addModule.apply(this, a);
    globalThis.soundLoaded = true;
  };
})()`;

/** Chromium whose pages start their sound slowly ({@link SLOW_SOUND}). */
async function chromiumSlow(): Promise<AnyBrowser> {
  return await withPageScript(SLOW_SOUND);
}

/** Chromium whose pages hold their sound until a user gesture ({@link HOLD_SOUND}). */
async function chromiumHeld(): Promise<AnyBrowser> {
  return await withPageScript(HOLD_SOUND);
}

/** Chromium with a script run in each page after it loads. */
async function withPageScript(script: string): Promise<AnyBrowser> {
  const b = await chromium();
  return {
    async page() {
      const { page, errors } = await b.page();
      return {
        page: {
          ...page,
          goto: async (u) => {
            await page.goto(u);
            await page.evaluate(script);
          },
        },
        errors,
      };
    },
    close: () => b.close(),
  };
}

/** Polls `script` in the page until it is truthy. */
const until = (page: Parameters<typeof untilIn>[0], script: string, what: string) =>
  untilIn(page, script, what, DEADLINE_MS);

/** The bursts' spacing: 600 ms apart, each up to 40 ms off. */
const GAPS = { gapMs: 600, spreadMs: 40 };

/**
 * The user's Start click, then the engine talking (`talk`): the sound must play after the click and the
 * player measure mouth vs sound (only from sound heard and an opening mouth shown). Returns its stats.
 */
async function clickAndTalk(
  page: Parameters<typeof untilIn>[0],
  talk: () => Promise<unknown>,
): Promise<Record<string, number>> {
  await page.click("#start");
  await until(page, "globalThis.player.state().muted === false", "the sound after the click");
  const talking = talk();
  await until(page, "globalThis.player.stats().avOffsetMs !== null", "mouth vs sound measured");
  await talking;
  return await page.evaluate("globalThis.player.stats()") as Record<string, number>;
}

/**
 * A page with a Start button (the user's click) and the player on `kind` (a `<video>` or a canvas), made with
 * `extra` options too. `latencyReads` counts the page's reads of its contexts' output latency (`outputLatency`,
 * `getOutputTimestamp()`): in Firefox on Linux the first can deadlock the page (docs/media-plane.md, "In
 * Firefox"), and the player makes none there unless told to.
 */
const PAGE = (s: CreatedSession, kind: "video" | "canvas", extra: Record<string, unknown> = {}) =>
  `(async () => {
  document.body.innerHTML = "";
  globalThis.latencyReads = 0;
  let proto = AudioContext.prototype;
  while (proto && !Object.getOwnPropertyDescriptor(proto, "outputLatency")) proto = Object.getPrototypeOf(proto);
  const latency = Object.getOwnPropertyDescriptor(proto, "outputLatency").get;
  Object.defineProperty(proto, "outputLatency", {
    configurable: true,
    get() { globalThis.latencyReads++; return latency.call(this); },
  });
  const stamp = proto.getOutputTimestamp;
  proto.getOutputTimestamp = function () { globalThis.latencyReads++; return stamp.call(this); };
  const start = document.createElement("button");
  start.id = "start";
  start.textContent = "Start";
  start.style.cssText = "position:absolute;left:300px;top:10px;width:80px;height:40px";
  document.body.append(start);
  const el = document.createElement(${JSON.stringify(kind)});
  el.width = 256;
  el.height = 256;
  document.body.append(el);
  // Where the player draws decoded frames into a canvas (Firefox's canvas stream): inside an animation frame
  // or between two (a canvas stream takes the canvas at the paint of the refresh it is drawn in).
  globalThis.frameDraws = { inAnimationFrame: 0, between: 0 };
  let inAnimationFrame = false;
  const raf = globalThis.requestAnimationFrame.bind(globalThis);
  globalThis.requestAnimationFrame = (cb) => raf((t) => {
    inAnimationFrame = true;
    try { cb(t); } finally { inAnimationFrame = false; }
  });
  const drawImage = CanvasRenderingContext2D.prototype.drawImage;
  CanvasRenderingContext2D.prototype.drawImage = function (image, ...rest) {
    if (typeof VideoFrame === "function" && image instanceof VideoFrame) {
      globalThis.frameDraws[inAnimationFrame ? "inAnimationFrame" : "between"]++;
    }
    return drawImage.call(this, image, ...rest);
  };
  const { createPlayer } = await import("/sdk/player.js");
  globalThis.mutedStates = [];
  globalThis.player = createPlayer({
    ${kind}: el,
    streamMetadata: ${JSON.stringify(s.stream_metadata)},
    clientToken: ${JSON.stringify(s.client_token)},
    microphone: false,
    onState: (st) => globalThis.mutedStates.push(st.muted),
    ...${JSON.stringify(extra)},
  });
  // The app's Start button: a video player's sound follows the element's (unmuted on the click).
  start.addEventListener("click", () => { if (el.tagName === "VIDEO") el.muted = false; });
})()`;

const BROWSERS = [
  ["chromium", chromium],
  ["chromium holding the sound until a gesture", chromiumHeld],
  ["chromium starting the sound slowly", chromiumSlow],
  // (on its mock audio device: a PulseAudio one made Firefox's page stop answering now and then — once in the
  // CI run of 6 Dec — see testing/firefox.ts)
  ["firefox", () => firefox()],
] as const;
for (const [name, launch] of BROWSERS) {
  for (const kind of ["video", "canvas"] as const) {
    Deno.test(`sdk player (${kind}) in ${name}, no autoplay flag: the picture at once, the sound after the Start click, the mouth in step`, async () => {
      await withRealtimeService("proj_player_gesture", async ({ service, engine, session }) => {
        let browser: AnyBrowser | null = null;
        try {
          const s = await session({
            ...(kind === "canvas" ? { transport: "websocket_fmp4" } : {}),
            deadlineMs: DEADLINE_MS,
          });
          browser = await launch();
          const { page, errors } = await browser.page();
          await page.goto(`${service.url}/docs/errors`); // a page of the service: same origin as the player
          await page.evaluate(PAGE(s, kind));
          await until(page, 'globalThis.player.state().state === "playing"', "the first picture");
          if (launch === chromiumSlow) {
            // The picture does not wait for the sound to start (the canvas player's first picture did, until 6
            // Dec: 0.9–2.2 s in Firefox on a sound server, measured; the face at rest needs no clock).
            assert.equal(
              await page.evaluate("globalThis.soundLoaded"),
              false,
              "the first picture waited for the sound",
            );
          }
          // The user's Start click. (Headless Chromium and Firefox ESR on its mock device start an AudioContext
          // without a gesture even without the autoplay flag — measured: `running` before any click, whatever
          // the policy flags and prefs; Firefox on a sound device holds it until one, as a user's browser does,
          // which the held pages emulate: the player says `muted` until the click. The video player's sound
          // follows its element's unmuting; the video-free player, with no element, starts on the gesture
          // itself — until 6 Dec it stayed muted.) After it, never muted.
          if (launch === chromiumHeld) {
            await until(page, "globalThis.player.state().muted === true", "muted before the click");
          }
          // (Firefox has no MediaStreamTrackGenerator: the video player shows its frames through a canvas
          // stream, and measures them all the same — the picture the element shows, read at its display time.)
          const stats = await clickAndTalk(
            page,
            () => engine.talk(s.session_id, { pcm, bursts: 8, ...GAPS }),
          );
          assert.ok(stats.audioDecodedMs > 2000, `sound decoded: ${stats.audioDecodedMs} ms`);
          assert.ok(stats.anchorMs !== null, "the audio clock runs");
          if (kind === "video") assert.ok(stats.framesDecoded > 50, `frames decoded: ${stats.framesDecoded}`);
          if (kind === "video" && name === "firefox") {
            // Drawn between two refreshes, a frame would be shown a refresh later than the player placed it
            // (until 6 Dec they were when they came due before they were decoded: 16 of 201 here without the fix,
            // a fifth on a sound server; with it 0 of ~200 in six runs, three with both cores busy). A few
            // are allowed: the first frame when it comes before the presenter exists, and the player's timer
            // draws while animation frames stall (a hidden or swamped page).
            const draws = await page.evaluate("globalThis.frameDraws") as Record<string, number>;
            assert.ok(
              draws.inAnimationFrame > 50 && draws.between <= 1 + draws.inAnimationFrame * 0.03,
              `frames drawn: ${JSON.stringify(draws)}`,
            );
          }
          assert.ok(Math.abs(stats.avOffsetMs) < 80, `the mouth ${stats.avOffsetMs} ms off its sound`);
          // Firefox (on Linux, as here) has its output latency assumed, never asked; Chromium is asked.
          const reads = await page.evaluate("globalThis.latencyReads") as number;
          if (name === "firefox") assert.equal(reads, 0, "Firefox was asked its output latency");
          else assert.ok(reads > 0, "Chromium was not asked its output latency");
          assert.deepEqual(errors, []);
          await page.evaluate("globalThis.player.close()");
        } finally {
          await browser?.close();
        }
      });
    });
  }
}

/** The `outputLatencyMs` option: a number is used and the browser never asked; `"read"` asks Firefox too. */
const LATENCY_CASES = [
  ["chromium", chromium, 30, false],
  ["firefox", () => firefox(), "read", true],
] as const;
for (const [name, launch, outputLatencyMs, asked] of LATENCY_CASES) {
  Deno.test(`sdk player (video) in ${name} with outputLatencyMs ${JSON.stringify(outputLatencyMs)}: the browser ${asked ? "asked" : "never asked"} its output latency, the mouth in step`, async () => {
    await withRealtimeService("proj_player_latency", async ({ service, engine, session }) => {
      let browser: AnyBrowser | null = null;
      try {
        const s = await session({ deadlineMs: DEADLINE_MS });
        browser = await launch();
        const { page, errors } = await browser.page();
        await page.goto(`${service.url}/docs/errors`);
        await page.evaluate(PAGE(s, "video", { outputLatencyMs }));
        await until(page, 'globalThis.player.state().state === "playing"', "the first picture");
        const stats = await clickAndTalk(page, () => engine.talk(s.session_id, { pcm, bursts: 6, ...GAPS }));
        assert.ok(stats.audioDecodedMs > 1500, `sound decoded: ${stats.audioDecodedMs} ms`);
        assert.ok(Math.abs(stats.avOffsetMs) < 80, `the mouth ${stats.avOffsetMs} ms off its sound`);
        const reads = await page.evaluate("globalThis.latencyReads") as number;
        if (asked) assert.ok(reads > 0, "the browser was not asked its output latency");
        else assert.equal(reads, 0, "the browser was asked its output latency");
        assert.deepEqual(errors, []);
        await page.evaluate("globalThis.player.close()");
      } finally {
        await browser?.close();
      }
    });
  });
}
