/**
 * The live part of `bench:lipsync`: a session of the service (real media plane and encoders) bridged over
 * the V0 protocol to the reference engine, which speaks bench sentences as its greeting and sends their
 * word timings (`response.words`). A media client watches, so the speech plays. The visemes the session
 * shows on its media timeline (`subscribeVisemes`) are scored against the engine's own phoneme times (as
 * its synthesiser reported them), placed on the same timeline where the playout put the response.
 *
 * @module
 */
import { generateEngineTls, type ReferenceEngine, startReferenceEngine } from "../../engine/mod.ts";
import { EspeakTts, type TimedSpeech, type Tts } from "../../engine/tts.ts";
import { loadConfig } from "../../src/config.ts";
import { createLogger } from "../../src/log.ts";
import { loadArtBank } from "../../src/media/art_bank.ts";
import { CATALOG } from "../../src/media/catalog.ts";
import { FrameCache } from "../../src/media/frame_cache.ts";
import { MediaPlane } from "../../src/media/media_plane.ts";
import { ReferenceRenderer } from "../../src/media/reference_renderer.ts";
import { phonemeVisemes, VISEME_INDEX } from "../../src/media/lipsync/visemes.ts";
import { createHarness, type Harness } from "../../testing/harness.ts";
import { MediaClientRecorder } from "../../testing/media.ts";
import { engineBody } from "../../testing/fixtures.ts";
import type { Segment } from "./corpus.ts";
import { frameLabels } from "./corpus.ts";
import { ratios, score } from "./score.ts";

/** What the live session measured. */
export interface LiveResult {
  speechS: number;
  acc7: number;
  recall: number;
  precision: number;
  /** The shift of the shown track that best fits the truth (+: the mouth is late). */
  offsetMs: number;
  acc7AtBestOffset: number;
  framesOnTime: number;
  framesLate: number;
  /** Frames (10 ms) decided at their deadline, with less than the full look-ahead (an engine ahead: 0). */
  deadlineFrames: number;
  /** Time in the viseme engine's (synchronous) calls per second of speech, % (measured session). */
  engineCpuPercent: number;
  /** The same for the first session of the process (code not yet compiled). */
  coldEngineCpuPercent?: number;
  sources: string[];
}

/** A synthesiser that remembers what it said with its timings. */
class RecordingTts implements Tts {
  readonly said: TimedSpeech[] = [];
  readonly #inner = new EspeakTts();

  synthesize(text: string, sampleRate: number): Promise<Int16Array> {
    return this.#inner.synthesize(text, sampleRate);
  }

  async synthesizeTimed(text: string, sampleRate: number): Promise<TimedSpeech> {
    const speech = await this.#inner.synthesizeTimed(text, sampleRate);
    this.said.push(speech);
    return speech;
  }
}

/** Runs the live session and scores it. */
export async function benchLive(options: { sentences: string[] }): Promise<LiveResult> {
  const tls = await generateEngineTls();
  const tts = new RecordingTts();
  const token = "bench-lipsync-token";
  const engine = await startReferenceEngine({
    tls,
    authToken: token,
    greeting: options.sentences.join(" "),
    tts,
    authFailure: "close_4001",
  });
  const config = { ...loadConfig({}).media, width: 256, height: 256 };
  const placements: { speech: number; at: number; n: number }[] = [];
  const plane = await MediaPlane.create({
    config,
    publicUrl: "http://localhost:8787",
    logger: createLogger({ sink: () => {} }),
    renderer: new ReferenceRenderer(await loadArtBank(CATALOG, 256, 256), 25, new FrameCache(64e6)),
    observer: { speechPlaced: (speech, at, n) => placements.push({ speech, at, n }) },
  });
  const h = await createHarness({ mediaPlane: plane, caCerts: [tls.caPem] });
  try {
    const base = h.serve();
    const key = await h.key("proj_bench_lipsync");
    // Two sessions one after the other: the first warms the process up (a process compiles its code
    // once, not per session); the second is measured.
    let result: LiveResult | null = null;
    let cold = 0;
    for (let run = 0; run < 2; run++) {
      placements.length = 0;
      tts.said.length = 0;
      result = await oneSession(h, base, key, engine, token, plane, tts, placements);
      if (run === 0) cold = result.engineCpuPercent;
    }
    return { ...result!, coldEngineCpuPercent: cold };
  } finally {
    await h.close();
    await engine.close();
  }
}

/** One session: the greeting played to a client, scored. */
async function oneSession(
  h: Harness,
  base: string,
  key: string,
  engine: ReferenceEngine,
  token: string,
  plane: MediaPlane,
  tts: RecordingTts,
  placements: { speech: number; at: number; n: number }[],
): Promise<LiveResult> {
  const res = await h.req("POST", "/v1/sessions", { key, body: engineBody(engine.url, {}, token) });
  if (res.status !== 200) throw new Error(`create answered ${res.status} ${res.text}`);
  const sessionId = res.body.session_id as string;
  const media = plane.get(sessionId)!.media;
  const shown: { t_ms: number; viseme: string }[] = [];
  const stop = media.subscribeVisemes((v) => shown.push({ t_ms: v.t_ms, viseme: v.viseme }));
  const client = MediaClientRecorder.withToken(
    `${base.replace("http", "ws")}/media/v0/sessions/${sessionId}`,
    res.body.client_token,
  );
  // The greeting plays once someone watches; wait until the engine hears it was played.
  const deadline = Date.now() + 120_000;
  const played = () => engine.stats().sessions.find((x) => x.session_id === sessionId)?.responses_played ?? 0;
  while (played() < 1) {
    if (Date.now() > deadline) throw new Error("the greeting was not played within 120 s");
    await new Promise((r) => setTimeout(r, 50));
  }
  // Let the timeline pass the end of the speech.
  await new Promise((r) => setTimeout(r, 500));
  const stats = media.stats();
  stop();
  await client.close();
  await h.req("POST", `/v1/sessions/${sessionId}/end?force=true`, { key });

  // The truth: the engine's phonemes (ms from the response's first sample) on the timeline.
  const speech = tts.said[0];
  if (!speech) throw new Error("the engine reported no timed speech");
  const toTimeline = (ms: number): number => {
    const s = ms * 48; // response sample at 48 kHz (the greeting is the session's first speech)
    for (const p of placements) if (s >= p.speech && s < p.speech + p.n) return (p.at + s - p.speech) / 48;
    const last = placements.at(-1)!;
    return (last.at + s - last.speech) / 48;
  };
  const startMs = toTimeline(0);
  const segments: Segment[] = speech.phonemes.map((p) => {
    const pv = phonemeVisemes(p.phoneme, "en-us");
    return {
      startMs: toTimeline(p.start_ms) - startMs,
      endMs: toTimeline(p.end_ms) - startMs,
      phoneme: pv?.phoneme ?? "",
      parts: pv?.parts ?? [{ viseme: "sil", share: 1 }],
    };
  });
  const durMs = segments.at(-1)!.endMs;
  const truth = frameLabels(segments, durMs);
  // The shown track, in 10 ms frames from the response's first sample, shifted by `shift` ms.
  const track = (shift: number) => {
    const out = new Uint8Array(truth.length);
    let j = 0;
    for (let f = 0; f < out.length; f++) {
      const t = startMs + f * 10 + 5 + shift;
      while (j + 1 < shown.length && shown[j + 1].t_ms <= t) j++;
      out[f] = shown[j] && shown[j].t_ms <= t
        ? VISEME_INDEX[shown[j].viseme as keyof typeof VISEME_INDEX]
        : 0;
    }
    return out;
  };
  const at0 = ratios(score(track(0), truth, segments));
  let best = { offset: 0, acc7: at0.acc7 };
  for (let shift = -100; shift <= 100; shift += 10) {
    const a = ratios(score(track(shift), truth, segments)).acc7;
    if (a > best.acc7 + 1e-9) best = { offset: shift, acc7: a };
  }
  const ls = stats.lipSync;
  return {
    speechS: durMs / 1000,
    acc7: at0.acc7,
    recall: at0.recall,
    precision: at0.precision,
    offsetMs: best.offset,
    acc7AtBestOffset: best.acc7,
    framesOnTime: ls.framesOnTime,
    framesLate: ls.framesLate,
    deadlineFrames: ls.responses.reduce((n, r) => n + r.deadline.frames, 0),
    engineCpuPercent: ls.speechMs > 0 ? ls.engineCpuMs / ls.speechMs * 100 : 0,
    sources: ls.responses.map((r) => `${r.responseId}: ${r.source}`),
  };
}
