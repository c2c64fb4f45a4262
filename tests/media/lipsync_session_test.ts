/**
 * Lip sync in live sessions: the source chosen for each response by what its engine gives (the reference
 * engine's V0 `response.words`; vendor1's transcript deltas, sent after the audio burst they describe;
 * vendor3's character alignment; audio alone), visemes stamped on the media timeline, the start of a
 * response held back until 80 ms of it are queued when SVC_LIPSYNC_HOLD_MS asks for it (not by default), and
 * an engine speaking in real time getting its visemes decided at each frame's deadline.
 */
import assert from "node:assert/strict";
import { EspeakLib } from "../../src/speech/espeak_lib.ts";
import { generateEngineTls, startReferenceEngine } from "../../engine/mod.ts";
import { espeakUtterance } from "../../bench/lipsync/corpus.ts";
import type { TimelineViseme } from "../../src/media/lipsync/timeline.ts";
import { startVendor1Fake } from "../../testing/fakes/vendor1_realtime.ts";
import { type Alignment, startVendor3Fake } from "../../testing/fakes/vendor3.ts";
import { DEADLINE_MS } from "../../testing/deadline.ts";
import { engineBody } from "../../testing/fixtures.ts";
import { createHarness } from "../../testing/harness.ts";
import {
  MediaClientRecorder,
  type MediaContext,
  smallRenderer,
  until,
  watchingRenderer,
  withMedia,
} from "../../testing/media.ts";
import { MediaPlane } from "../../src/media/media_plane.ts";
import { loadConfig } from "../../src/config.ts";
import { createLogger } from "../../src/log.ts";
import { testTls, withVendors } from "../providers/_helpers.ts";
import { StreamResampler } from "../../src/media/lipsync/dsp.ts";
import { dominant } from "../../src/media/lipsync/coarticulation.ts";
import { VISEME_INDEX, VISEMES } from "../../src/media/lipsync/visemes.ts";
import { vowelBurst } from "../../bench/engine.ts";

const lib = EspeakLib.open();
const TEXT = "Bob made a map of the big pub, maybe five.";
/** An open vowel ("ah"): the lip sync opens the mouth from its first 10 ms (synthesised outside the tests). */
const AH = vowelBurst(400);

/** espeak-ng speech at `rate` in 20 ms chunks, with its words. */
function speech(rate: number, text = TEXT) {
  const u = espeakUtterance(lib, "s", text, { voice: "en-us+m8", rate: 170 }, "en");
  const pcm = Int16Array.from(
    new StreamResampler(u.sampleRate, rate).process(u.samples),
    (x) => Math.round(x),
  );
  const n = rate / 50;
  const chunks: Int16Array[] = [];
  for (let at = 0; at < pcm.length; at += n) chunks.push(pcm.slice(at, at + n));
  return { chunks, words: u.words, text: u.text };
}

Deno.test("lip sync session: the reference engine's response.words make its greeting lip-synced from word timings", async () => {
  const tls = await generateEngineTls();
  const engine = await startReferenceEngine({
    tls,
    authToken: "t0k",
    greeting: TEXT,
    authFailure: "close_4001",
  });
  const plane = await MediaPlane.create({
    config: { ...loadConfig({}).media, width: 256, height: 256 },
    publicUrl: "http://localhost:8787",
    logger: createLogger({ sink: () => {} }),
    renderer: await smallRenderer(),
  });
  const h = await createHarness({ mediaPlane: plane, caCerts: [tls.caPem] });
  try {
    const base = h.serve();
    const key = await h.key("proj_lipsync");
    const res = await h.req("POST", "/v1/sessions", { key, body: engineBody(engine.url, {}, "t0k") });
    assert.equal(res.status, 200, res.text);
    const sid = res.body.session_id;
    const media = plane.get(sid)!.media;
    const shown: TimelineViseme[] = [];
    const stop = media.subscribeVisemes((v) => shown.push(v));
    const c = MediaClientRecorder.withToken(
      `${base.replace("http", "ws")}/media/v0/sessions/${sid}`,
      res.body.client_token,
    );
    await until(() => engine.stats().sessions[0]?.responses_played >= 1, DEADLINE_MS, "greeting played");
    stop();
    const responses = media.stats().lipSync.responses;
    assert.equal(responses[0]?.source, "words", JSON.stringify(responses));
    assert.ok(responses[0].words >= 8, `${responses[0].words} words`);
    // The visemes on the timeline: increasing times, the closures of "Bob made a map" among them.
    assert.ok(shown.length > 20, `${shown.length} viseme changes`);
    for (let i = 1; i < shown.length; i++) assert.ok(shown[i].t_ms > shown[i - 1].t_ms);
    assert.ok(shown.filter((v) => v.viseme === "PP").length >= 4, "lips close for b, m, p");
    for (const v of shown) assert.ok(Math.abs(v.weights.reduce((a, b) => a + b, 0) - 1) < 0.02);
    await c.close();
  } finally {
    await h.close();
    await engine.close();
  }
});

Deno.test("lip sync session: vendor1's transcript deltas (after the audio burst) make a transcript-aligned mouth", async () => {
  const SECRET = `ek_test_${crypto.randomUUID().replaceAll("-", "")}`;
  const fake = startVendor1Fake(testTls, { secret: SECRET });
  try {
    await withVendors({ SVC_VENDOR1_REALTIME_URL: fake.url }, async ({ create, wsUrl, plane }) => {
      const res = await create({
        provider_type: "vendor1_realtime",
        provider_config: { vendor1_realtime: { client_secret: SECRET } },
      });
      assert.equal(res.status, 200, res.text);
      const sid = res.body.session_id;
      // The reply arrives while nobody watches (it waits in the queue), then a client joins.
      const s = speech(24000);
      fake.call().speak(s.chunks, s.text);
      const media = plane!.get(sid)!.media;
      await until(() => media.stats().queuedSamples > 0, DEADLINE_MS, "queued speech");
      const c = MediaClientRecorder.withToken(wsUrl(sid), res.body.client_token);
      await until(() => media.stats().lipSync.responses.length >= 1, DEADLINE_MS, "response lip-synced");
      const r = media.stats().lipSync.responses[0];
      assert.equal(r.source, "text", JSON.stringify(r));
      assert.ok(r.frames.text > r.frames.audio, JSON.stringify(r.frames));
      await c.close();
    }, { media: true });
  } finally {
    await fake.close();
  }
});

Deno.test("lip sync session: vendor3's character alignment makes a word-timed mouth", async () => {
  const fake = startVendor3Fake(testTls, { publicAgents: ["agent_a"], privateAgents: [], apiKey: "xi_k" });
  try {
    await withVendors(
      { SVC_VENDOR3_URL: fake.url, SVC_VENDOR3_API_URL: fake.apiUrl },
      async ({ create, wsUrl, plane }) => {
        const res = await create({
          provider_type: "vendor3",
          provider_config: { vendor3: { agent_id: "agent_a" } },
        });
        assert.equal(res.status, 200, res.text);
        const sid = res.body.session_id;
        const c = MediaClientRecorder.withToken(wsUrl(sid), res.body.client_token);
        await c.until(() => c.segments().length > 0, DEADLINE_MS, "stream");
        const rate = fake.conversation().outputRate;
        const s = speech(rate);
        // Group the 20 ms chunks by 10 (200 ms events) and give each its characters, timed from its start.
        const events: Int16Array[] = [];
        const alignments: Alignment[] = [];
        for (let i = 0; i < s.chunks.length; i += 10) {
          const group = s.chunks.slice(i, i + 10);
          const pcm = new Int16Array(group.reduce((n, g) => n + g.length, 0));
          let o = 0;
          for (const g of group) {
            pcm.set(g, o);
            o += g.length;
          }
          const from = i * 20, to = from + pcm.length * 1000 / rate;
          const a: Alignment = { chars: [], char_start_times_ms: [], char_durations_ms: [] };
          for (const w of s.words) {
            if (w.start_ms < from || w.start_ms >= to) continue;
            const chars = [...w.word, " "];
            const step = (w.end_ms - w.start_ms) / w.word.length;
            chars.forEach((ch, k) => {
              a.chars.push(ch);
              a.char_start_times_ms.push(Math.round(w.start_ms - from + k * step));
              a.char_durations_ms.push(ch === " " ? 0 : Math.round(step));
            });
          }
          events.push(pcm);
          alignments.push(a);
        }
        fake.conversation().speak(events, s.text, alignments);
        const media = plane!.get(sid)!.media;
        await until(() => media.stats().lipSync.responses.length >= 1, DEADLINE_MS, "response lip-synced");
        const r = media.stats().lipSync.responses[0];
        assert.equal(r.source, "words", JSON.stringify(r));
        assert.ok(r.words >= 8, `${r.words} words`);
        await c.close();
      },
      { media: true },
    );
  } finally {
    await fake.close();
  }
});

/** A session on the fake engine, watched by a client, and espeak-ng speech for it. */
async function watched({ create, wsUrl, fake, media }: MediaContext) {
  const s = await create();
  const engine = fake.of(s.session_id);
  const c = MediaClientRecorder.withToken(wsUrl(s.session_id), s.client_token);
  await c.until(() => c.segments().length > 0, DEADLINE_MS, "stream");
  return { engine, c, m: media(s.session_id), sp: speech(24000) };
}

Deno.test("lip sync session: audio alone without knowledge; with SVC_LIPSYNC_HOLD_MS=80 a response's start waits until 80 ms of it are queued", async () => {
  await withMedia(async (ctx) => {
    const { engine, c, m, sp } = await watched(ctx);
    engine.events.onResponseStarted("r_1");
    // 40 ms of the response: held back (not played) however long the clock runs.
    engine.events.onAudio(sp.chunks[0], "r_1");
    engine.events.onAudio(sp.chunks[1], "r_1");
    const written = m.stats().audioWritten;
    await until(() => m.stats().audioWritten > written + 48000 * 0.3, DEADLINE_MS, "the clock to run 300 ms");
    const held = m.stats().queuedSamples;
    assert.ok(
      held >= 2 * 960 - 2 && held <= 2 * 960,
      `the response's first 40 ms are still held (${held} queued)`,
    );
    // Another 40 ms: 80 ms queued, the response starts.
    engine.events.onAudio(sp.chunks[2], "r_1");
    engine.events.onAudio(sp.chunks[3], "r_1");
    await until(() => m.stats().queuedSamples < 4 * 960, DEADLINE_MS, "playout to start");
    for (const chunk of sp.chunks.slice(4)) engine.events.onAudio(chunk, "r_1");
    engine.events.onResponseDone("r_1", "completed");
    await until(() => engine.played.some((p) => p.responseId === "r_1"), DEADLINE_MS, "r_1 played");
    const r = m.stats().lipSync.responses[0];
    assert.equal(r.source, "audio");
    assert.ok(r.frames.audio >= sp.chunks.length * 2 - 2, `${r.frames.audio} frames`);
    await c.close();
  }, { media: { lipSyncHoldMs: 80 } });
});

Deno.test("lip sync session: by default (SVC_LIPSYNC_HOLD_MS=0) a response's first chunk plays at once", async () => {
  await withMedia(async (ctx) => {
    const { engine, c, m, sp } = await watched(ctx);
    engine.events.onResponseStarted("r_1");
    engine.events.onAudio(sp.chunks[0], "r_1");
    engine.events.onAudio(sp.chunks[1], "r_1");
    await until(() => m.stats().queuedSamples < 2 * 960 - 2, DEADLINE_MS, "the first 40 ms to play");
    engine.events.onResponseDone("r_1", "completed");
    await c.close();
  });
});

Deno.test("lip sync session: an engine speaking in real time, no hold: each frame's visemes are decided by the time the frame is rendered (its deadline), with the look-ahead that has arrived", async () => {
  await withMedia(async (ctx) => {
    const { engine, c, m, sp } = await watched(ctx);
    engine.events.onResponseStarted("r_1");
    // 20 ms chunks at the pace of real time (never ahead of it: a timer may fire late, not early).
    await atRealTimePace(sp.chunks.length, (i) => engine.events.onAudio(sp.chunks[i], "r_1"));
    engine.events.onResponseDone("r_1", "completed");
    await until(() => engine.played.some((p) => p.responseId === "r_1"), DEADLINE_MS, "r_1 played");
    const ls = m.stats().lipSync;
    const r = ls.responses[0];
    // Only the frames shown before the response's first 10 ms could even be analysed have to hold the
    // mouth at rest; without the deadline every frame of a real-time engine waits for its look-ahead. (A
    // frame whose instant's chunk is still on its way — by the phase of the chunks against the frames, up
    // to every frame — holds the last mouth decided: it has no audio to decide from. Before the playout
    // waited for such a chunk, silence was cut in instead, and the frame counted as decided.)
    const shown = `late ${ls.framesLate}, on time ${ls.framesOnTime}, awaited ${ls.framesAwaited}`;
    assert.ok(ls.framesLate <= 3, `frames shown undecided, their audio there: ${shown}`);
    assert.ok(ls.framesOnTime + ls.framesAwaited > sp.chunks.length / 2 - 5, `frames shown: ${shown}`);
    assert.ok(r.frames.audio >= sp.chunks.length * 2 - 2, `every frame decided: ${JSON.stringify(r)}`);
    if (r.deadline.frames > 0) {
      assert.ok(
        r.deadline.lookaheadMs !== null && r.deadline.lookaheadMs < 80,
        `decided early with less than the full look-ahead: ${JSON.stringify(r.deadline)}`,
      );
    }
    await c.close();
  });
});

Deno.test("lip sync session: an engine speaking in real time, each response announced before its audio: the mouth opens with the speech's first sound, not frames later (a frame sees the speech still queued for playout)", async () => {
  // The faces drawn: each frame's start on the timeline and whether its mouth is open ("aa").
  const drawn: { t: number; open: boolean }[] = [];
  const renderer = await watchingRenderer((req) => {
    if (req.face) drawn.push({ t: req.timeMs, open: VISEMES[dominant(req.face.visemes)] === "aa" });
  });
  const BURSTS = 10;
  const starts: number[] = [];
  await withMedia(async (ctx) => {
    const { engine, c, m } = await watched(ctx);
    let last = "sil";
    const stop = m.subscribeVisemes((v) => {
      if (last === "sil" && v.viseme !== "sil") starts.push(v.t_ms);
      last = v.viseme;
    });
    // An open vowel, 400 ms, in 20 ms chunks at the pace of real time, 60 ms after the response is announced
    // (as bench:player's engine speaks).
    for (let b = 0; b < BURSTS; b++) {
      const id = `r_${b}`;
      engine.events.onResponseStarted(id);
      await new Promise((r) => setTimeout(r, 60));
      await atRealTimePace(20, (i) => engine.events.onAudio(AH.slice(i * 480, (i + 1) * 480), id));
      engine.events.onResponseDone(id, "completed");
      await until(() => engine.played.some((p) => p.responseId === id), DEADLINE_MS, `${id} played`);
      await new Promise((r) => setTimeout(r, 300));
    }
    stop();
    await c.close();
  }, { plane: { renderer } });
  // Each burst's first open mouth: the middle of the first frame drawn open − the speech's start. Without
  // the queued speech, frames rendered while the burst's start was still queued drew it closed: 66–196 ms
  // late in 3–5 of 12 bursts (0 with it, at most 36 ms).
  const lags = starts.map((st) => {
    const f = drawn.find((d) => d.open && d.t + 40 > st);
    return f ? Math.round(f.t + 20 - st) : Infinity;
  });
  assert.ok(starts.length >= BURSTS, `${starts.length} speech starts`);
  const late = lags.filter((l) => l > 60);
  assert.ok(late.length <= 1, `mouth opened > 60 ms after the speech: ${lags.join(" ")}`);
});

Deno.test("lip sync session: a response's first sound starts a quarter frame off the frames' grid, so the frame that opens the mouth is unambiguously the one whose start is nearest it (the one a player shows at the sound's start)", async () => {
  // A player shows the frame whose start is within half a frame of a sound's start at that start (its sound
  // detector on the decoded audio); the service opens the mouth on the first frame whose middle has the
  // sound. The two agree when the sound starts inside that frame's (start − 20, start + 20] with room to
  // spare for the codec's smear (the sound a player detects starts ~1 ms after the samples placed). Speech
  // in whole 20 ms blocks starts on a block: on the frames' middles — that edge — before the fix.
  const drawn: { t: number; aa: number }[] = [];
  const renderer = await watchingRenderer((req) => {
    if (req.face) drawn.push({ t: req.timeMs, aa: req.face.visemes[VISEME_INDEX.aa] });
  });
  const BURSTS = 8;
  let placed: { at: number; n: number }[] = [];
  await withMedia(async (ctx) => {
    const { engine, c } = await watched(ctx);
    for (let b = 0; b < BURSTS; b++) {
      const id = `r_${b}`;
      engine.events.onResponseStarted(id);
      await new Promise((r) => setTimeout(r, 60));
      await atRealTimePace(10, (i) => engine.events.onAudio(AH.slice(i * 480, (i + 1) * 480), id));
      engine.events.onResponseDone(id, "completed");
      await until(() => engine.played.some((p) => p.responseId === id), DEADLINE_MS, `${id} played`);
      // A gap that is not a whole number of frames: the bursts land anywhere on the clock.
      await new Promise((r) => setTimeout(r, 250 + 7 * b));
    }
    placed = ctx.speech;
    await c.close();
  }, { plane: { renderer } });
  // Each burst's start on the timeline (ms): a placement after 150 ms or more of silence (a loaded machine's
  // late chunk leaves a shorter gap inside a burst).
  const starts = placed.filter((p, i) => i === 0 || p.at - (placed[i - 1].at + placed[i - 1].n) >= 48 * 150)
    .map((p) => p.at / 48);
  assert.equal(starts.length, BURSTS, `burst starts: ${starts.join(" ")}`);
  // Each burst: the first frame drawn with the mouth open ("aa" holds half of it or more), and where the
  // speech's start lies against that frame's (start − 20, start + 20]: how far inside it (< 5 ms: on the
  // edge), or the frame is before it (the mouth opened early), or after it (opened late: its speech was not
  // known yet when the frame was rendered — a loaded machine's late tick, not this test's subject).
  const bursts = starts.map((st) => {
    const f = drawn.find((d) => d.aa >= 0.5 && d.t + 60 > st);
    if (!f) return { st, kind: "never", margin: NaN };
    if (f.t + 20 < st) return { st, kind: "early", margin: NaN };
    if (st <= f.t - 20) return { st, kind: "late", margin: NaN };
    const margin = Math.round(Math.min(st - (f.t - 20), f.t + 20 - st));
    return { st, kind: margin < 5 ? "edge" : "inside", margin };
  });
  const show = bursts.map((b) => `${b.kind}${Number.isNaN(b.margin) ? "" : ` ${b.margin}`}`).join(", ");
  const mod = starts.map((s) => Math.round(s % 40)).join(" ");
  const wrong = bursts.filter((b) => b.kind === "edge" || b.kind === "early");
  assert.ok(
    wrong.length <= 1,
    `speech starts on the edge of the opening frame's window: ${show} (mod 40: ${mod})`,
  );
  const inside = bursts.filter((b) => b.kind === "inside");
  assert.ok(inside.length >= BURSTS / 2, `too few bursts opened in their frame: ${show} (mod 40: ${mod})`);
});

Deno.test("lip sync session: a real-time engine's chunk that comes after its frame was rendered but before its sound is due neither cuts a silence into the speech nor a closed mouth into the picture", async () => {
  // An engine speaking in real time has its next chunk written the moment it arrives. The playout wrote
  // silence a block ahead of the clock even for a response still speaking, so a chunk 0–20 ms late (by where
  // the response fell on the block grid) had 20 ms of silence cut into the speech before it: heard, and
  // drawn as a mouth closing mid-vowel. Now that silence waits until it is due, and a frame rendered while
  // its speech is on its way holds the mouth it had. Here the chunks whose block holds a frame's face instant
  // (the middle of its display time) come right after that frame is rendered, 10 ms before they are due.
  const drawn: { t: number; aa: number }[] = [];
  let rendered = (_t: number) => {};
  const renderer = await watchingRenderer((req) => {
    if (req.face) drawn.push({ t: req.timeMs, aa: req.face.visemes[VISEME_INDEX.aa] });
    rendered(req.timeMs);
  });
  /** Resolves once the frame starting at `t` ms (or a later one) is rendered, or after `maxMs`. */
  const renderedAt = (t: number, maxMs: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, maxMs);
      rendered = (at) => {
        if (at < t) return;
        clearTimeout(timer);
        resolve();
      };
    });
  const BURSTS = 8;
  const CHUNKS = 20;
  let placed: { at: number; n: number }[] = [];
  await withMedia(async (ctx) => {
    const { engine, c } = await watched(ctx);
    for (let b = 0; b < BURSTS; b++) {
      const id = `r_${b}`;
      engine.events.onResponseStarted(id);
      await new Promise((r) => setTimeout(r, 60));
      const t0 = performance.now();
      const first = ctx.speech.length;
      engine.events.onAudio(AH.slice(0, 480), id);
      await until(() => ctx.speech.length > first, DEADLINE_MS, `${id}'s first block placed`);
      const w0 = ctx.speech[first].at / 48;
      for (let i = 1; i < CHUNKS; i++) {
        const block = w0 + i * 20;
        if ((block - 10) % 40 === 0) {
          // The face of the frame starting 10 ms before this block is taken in it: the chunk comes right
          // after that frame is rendered (at most 100 ms later, should that frame be dropped).
          await renderedAt(block - 10, 100);
        } else {
          const wait = t0 + i * 20 - performance.now();
          if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        }
        engine.events.onAudio(AH.slice(i * 480, (i + 1) * 480), id);
      }
      rendered = () => {};
      engine.events.onResponseDone(id, "completed");
      await until(() => engine.played.some((p) => p.responseId === id), DEADLINE_MS, `${id} played`);
      await new Promise((r) => setTimeout(r, 250 + 7 * b));
    }
    placed = ctx.speech;
    await c.close();
  }, { plane: { renderer } });
  // Silence cut into bursts: before the fix 7 of 8 (every burst whose chunks came as above). A clock tick more
  // than 10 ms late writes the silence before the chunk comes: with both cores busy, 0–2 of 8 (the first
  // bursts, the process still warming up).
  const { bursts } = speechRuns(placed, BURSTS, 3);
  // The mouth, in the frames whose face is taken inside a burst not cut (from 100 ms into it to 60 ms before
  // its end: the vowel is open there): never drawn less than half open.
  const dips: string[] = [];
  for (const b of bursts) {
    if (b.holes.length) continue;
    for (const f of drawn) {
      const face = f.t + 20;
      if (face >= b.start + 100 && face < b.end - 60 && f.aa < 0.5) {
        dips.push(`${Math.round(face - b.start)} ms into ${Math.round(b.start)}: aa ${f.aa.toFixed(2)}`);
      }
    }
  }
  assert.ok(dips.length <= 1, `mouth drawn closing mid-vowel: ${dips.join("; ")}`);
});

Deno.test("lip sync session: a real-time engine's chunk that reached the service while its event loop was held up is played, not replaced by silence (the clock's expired timer runs before the socket's message)", async () => {
  // After the event loop is held up (a busy process), Deno runs the timers that expired meanwhile before the
  // socket messages that came meanwhile: the media clock found the next block due and wrote silence for it
  // although the engine's chunk was already there, unread. Here the engine's chunks come over a real
  // WebSocket, and after sending some of them the test holds the event loop for 50 ms.
  const BURSTS = 6;
  const CHUNKS = 20;
  /** Chunks after which the event loop is held up. */
  const STALL_AFTER = new Set([5, 12]);
  let placed: { at: number; n: number }[] = [];
  await withMedia(async (ctx) => {
    const { engine, c } = await watched(ctx);
    let current = "";
    const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
      const { socket, response } = Deno.upgradeWebSocket(req);
      socket.binaryType = "arraybuffer";
      socket.onmessage = (e) => engine.events.onAudio(new Int16Array(e.data as ArrayBuffer), current);
      return response;
    });
    const ws = new WebSocket(`ws://127.0.0.1:${server.addr.port}`);
    await new Promise((r) => ws.onopen = r);
    try {
      for (let b = 0; b < BURSTS; b++) {
        current = `r_${b}`;
        engine.events.onResponseStarted(current);
        await new Promise((r) => setTimeout(r, 60));
        await atRealTimePace(CHUNKS, (i) => {
          ws.send(AH.slice(i * 480, (i + 1) * 480));
          if (STALL_AFTER.has(i)) {
            const until = performance.now() + 50;
            while (performance.now() < until) { /* the event loop held up */ }
          }
        });
        await new Promise((r) => setTimeout(r, 60)); // (the last chunk read)
        engine.events.onResponseDone(current, "completed");
        await until(
          () => engine.played.some((p) => p.responseId === current),
          DEADLINE_MS,
          `${current} played`,
        );
        await new Promise((r) => setTimeout(r, 250 + 7 * b));
      }
    } finally {
      ws.close();
      await server.shutdown();
    }
    placed = ctx.speech;
    await c.close();
  });
  // The defect cuts its silence where the chunk sent right before a hold-up belongs (tried: with the playout's
  // one-turn wait removed, 20-40 ms at 100 ms into every burst); a chunk late for another reason (the test's
  // own timers on a busy machine: its engine shares this event loop) may cut one elsewhere, which is not what
  // this test is about.
  speechRuns(placed, BURSTS, 1, [...STALL_AFTER].map((i) => i * 20));
});

/**
 * The bursts as placed on the timeline (ms), from the playout's placements (48 kHz samples): runs of speech;
 * a gap under 150 ms inside one is a silence cut into it (`holes`, ms; `holesAt`, where each starts, ms into
 * its burst). Asserts there are `expected` bursts, and silence cut into at most `maxCut` of them — counting,
 * when `near` is given, only the holes that start within 25 ms of one of those instants (ms into a burst).
 */
function speechRuns(
  placed: { at: number; n: number }[],
  expected: number,
  maxCut: number,
  near?: number[],
) {
  const bursts: { start: number; end: number; holes: number[]; holesAt: number[] }[] = [];
  for (const p of placed) {
    const at = p.at / 48;
    const last = bursts.at(-1);
    if (last && at - last.end < 150) {
      if (at > last.end) {
        last.holes.push(Math.round(at - last.end));
        last.holesAt.push(Math.round(last.end - last.start));
      }
      last.end = at + p.n / 48;
    } else bursts.push({ start: at, end: at + p.n / 48, holes: [], holesAt: [] });
  }
  assert.equal(bursts.length, expected, `bursts: ${bursts.map((b) => Math.round(b.start)).join(" ")}`);
  const counted = (b: { holesAt: number[] }) =>
    near ? b.holesAt.filter((h) => near.some((t) => Math.abs(h - t) <= 25)).length : b.holesAt.length;
  const cut = bursts.filter((b) => counted(b) > 0);
  assert.ok(
    cut.length <= maxCut,
    `silence cut into ${cut.length} of ${expected} bursts${near ? ` near ${near.join(", ")} ms` : ""}: ${
      bursts.map((b) => `[${b.holes.map((h, i) => `${h} ms at ${b.holesAt[i]}`).join(", ")}]`).join(" ")
    }`,
  );
  return { bursts, cut };
}

/** Calls `each(i)` for `i` = 0 … `count − 1`, 20 ms apart at the pace of real time (never ahead of it: a timer may fire late, not early). */
async function atRealTimePace(count: number, each: (i: number) => void): Promise<void> {
  const t0 = performance.now();
  for (let i = 0; i < count; i++) {
    const wait = t0 + i * 20 - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    each(i);
  }
}
