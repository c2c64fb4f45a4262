/**
 * The bench's conversation engine (protocol V0 over wss): answers the handshake, then, when told to,
 * speaks bursts of a 300 Hz tone (the default: the latency benches' onset detectors are tuned to it) or of
 * an open vowel ("ah", espeak-ng: the lip sync opens the mouth for it, while a pure tone reads as a hum,
 * lips closed; `bench:player` measures the mouth) in 20 ms PCM16 chunks paced exactly in real time (no
 * lead), recording when each chunk was sent, so the bench can time each chunk to the fragment that carries
 * it.
 *
 * @module
 */
import { EspeakLib } from "../src/speech/espeak_lib.ts";
import { StreamResampler } from "../src/media/lipsync/dsp.ts";
import { startRealtimeEngine } from "../testing/realtime_engine.ts";

/** One sent chunk. */
export interface SentChunk {
  responseId: string;
  /** Index of the chunk within its response. */
  index: number;
  /** `performance.timeOrigin + performance.now()` when it was sent. */
  sentAt: number;
}

/** A session as the engine sees it. */
export interface EngineSession {
  sessionId: string;
  sent: SentChunk[];
  userAudioBytes: number;
}

/** Speech pattern: bursts of `burstMs` of sound separated by `gapMs` of silence. */
export interface TalkPattern {
  burstMs: number;
  gapMs: number;
  bursts: number;
  /**
   * What a burst sounds like: a 300 Hz tone (default), an open vowel ({@link vowelBurst}) or running speech
   * ({@link speechBurst}: the mouth changes as often as in conversation).
   */
  sound?: "tone" | "vowel" | "speech";
  /**
   * Gaps longer by a different 0…`spreadMs − 1` ms each (a fixed sequence: burst `b`'s gap gains
   * `17·b mod spreadMs`), so bursts start at every phase of the video's frames and the page's refreshes; a
   * period that is a whole number of frames (400 + 600 ms at 25 fps) measures one phase (default 0).
   */
  spreadMs?: number;
}

const RATE = 24000;
/** How long before a response's first audio chunk it is announced (`response.started`), ms. */
const ANNOUNCE_MS = 60;
const CHUNK = 480; // 20 ms

/** A running bench engine. */
export interface BenchEngine {
  url: string;
  sessions: Map<string, EngineSession>;
  /** Starts talking on a session; resolves when the pattern is done. */
  talk(sessionId: string, pattern: TalkPattern): Promise<void>;
  close(): Promise<void>;
}

/**
 * `ms` of a sustained "ah" at {@link RATE} (espeak-ng, en-us, slow), from its first sound (above −40 dBFS,
 * the onset level of the player and of the bench page; its natural 3 ms attack kept: cut, the sudden start
 * reads as a lip release, PP, before the vowel), with a 5 ms fade at its end.
 */
export function vowelBurst(ms: number): Int16Array {
  const lib = EspeakLib.open();
  const n = Math.round(ms * RATE / 1000);
  for (let rate = 120; rate >= 80; rate -= 20) {
    const speech = lib.synthesize("ah", { voice: "en-us", rate });
    const pcm = Int16Array.from(
      new StreamResampler(speech.sampleRate, RATE).process(speech.samples),
      Math.round,
    );
    const start = pcm.findIndex((x) => Math.abs(x) > 0.01 * 32768);
    if (start < 0 || pcm.length - start < n) continue;
    const out = pcm.slice(start, start + n);
    const fade = Math.round(RATE * 0.005);
    for (let i = 0; i < fade; i++) out[n - 1 - i] = Math.round(out[n - 1 - i] * i / fade);
    return out;
  }
  throw new Error(`espeak-ng's "ah" is shorter than ${ms} ms`);
}

/** The sentence {@link speechBurst} speaks (long enough for 3 s at espeak-ng's default rate). */
const SENTENCE =
  "Well, the quick brown fox jumps over the lazy dog, and then we should probably talk about " +
  "your order, which ships on Thursday morning from our warehouse near the river.";

/**
 * `ms` of running speech at {@link RATE} (espeak-ng, en-us, its default rate), from its first sound, with a
 * 5 ms fade at its end: visemes change about as often as in conversation (the video-free browser bench
 * draws them).
 */
export function speechBurst(ms: number): Int16Array {
  const speech = EspeakLib.open().synthesize(SENTENCE, { voice: "en-us" });
  const pcm = Int16Array.from(
    new StreamResampler(speech.sampleRate, RATE).process(speech.samples),
    Math.round,
  );
  const start = Math.max(0, pcm.findIndex((x) => Math.abs(x) > 0.01 * 32768));
  const n = Math.round(ms * RATE / 1000);
  if (pcm.length - start < n) throw new Error(`the bench sentence is shorter than ${ms} ms`);
  const out = pcm.slice(start, start + n);
  const fade = Math.round(RATE * 0.005);
  for (let i = 0; i < fade; i++) out[n - 1 - i] = Math.round(out[n - 1 - i] * i / fade);
  return out;
}

/** `ms` of a 300 Hz tone at {@link RATE} (amplitude 12000). */
export function toneBurst(ms: number): Int16Array {
  const out = new Int16Array(Math.round(ms * RATE / 1000));
  for (let j = 0; j < out.length; j++) out[j] = Math.round(12000 * Math.sin(2 * Math.PI * 300 * j / RATE));
  return out;
}

/** The wall clock with sub-millisecond precision, comparable across processes. */
export function wallNow(): number {
  return performance.timeOrigin + performance.now();
}

function sleepUntil(t: number): Promise<void> {
  return new Promise((r) => setTimeout(r, Math.max(0, t - wallNow())));
}

/** Starts the engine on 127.0.0.1 with the given TLS material. */
export function startBenchEngine(tls: { certPem: string; keyPem: string }): BenchEngine {
  const sockets = new Map<string, WebSocket>();
  const sessions = new Map<string, EngineSession>();
  const closed: Promise<void>[] = [];
  let stopping = false;
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, cert: tls.certPem, key: tls.keyPem, onListen: () => {} },
    (req) => {
      const { socket, response } = Deno.upgradeWebSocket(req, { protocol: "avatar-engine.v0" });
      closed.push(new Promise((r) => socket.addEventListener("close", () => r(), { once: true })));
      socket.binaryType = "arraybuffer";
      let session: EngineSession | null = null;
      socket.onmessage = (e) => {
        if (typeof e.data !== "string") {
          if (session) session.userAudioBytes += (e.data as ArrayBuffer).byteLength;
          return;
        }
        const msg = JSON.parse(e.data);
        if (msg.type === "session.start") {
          session = { sessionId: msg.session_id, sent: [], userAudioBytes: 0 };
          sessions.set(msg.session_id, session);
          sockets.set(msg.session_id, socket);
          socket.send(JSON.stringify({
            type: "session.ready",
            session_id: msg.session_id,
            engine_session_id: `bench_${sessions.size}`,
            audio: { output: { encoding: "pcm_s16le", sample_rate: RATE, channels: 1 } },
          }));
        } else if (msg.type === "ping") socket.send(JSON.stringify({ type: "pong", id: msg.id }));
        else if (msg.type === "session.end") socket.close(1000);
      };
      return response;
    },
  );
  return {
    url: `wss://localhost:${server.addr.port}/v0`,
    sessions,
    async talk(sessionId, pattern) {
      const socket = sockets.get(sessionId);
      const session = sessions.get(sessionId);
      if (!socket || !session) throw new Error(`unknown session ${sessionId}`);
      const chunks = Math.round(pattern.burstMs / 20);
      const burst = pattern.sound === "vowel"
        ? vowelBurst(chunks * 20)
        : pattern.sound === "speech"
        ? speechBurst(chunks * 20)
        : toneBurst(chunks * 20);
      let t = wallNow() + 20 + ANNOUNCE_MS;
      for (let b = 0; b < pattern.bursts && !stopping; b++) {
        const id = `r_${b}`;
        // The response is announced a little before its audio (the early engine's profile). Sent together,
        // the small text frame and the first chunk met Nagle's algorithm (Deno.serve leaves TCP_NODELAY off)
        // and the service's delayed ACK, which held the first chunk ~40 ms; the service now acknowledges
        // every read of an engine's input at once (src/providers/wire/websocket.ts).
        await sleepUntil(t - ANNOUNCE_MS);
        if (socket.readyState !== WebSocket.OPEN) return;
        socket.send(JSON.stringify({ type: "response.started", response_id: id }));
        for (let i = 0; i < chunks; i++) {
          await sleepUntil(t + i * 20);
          if (socket.readyState !== WebSocket.OPEN) return;
          socket.send(burst.slice(i * CHUNK, (i + 1) * CHUNK).buffer);
          session.sent.push({ responseId: id, index: i, sentAt: wallNow() });
        }
        t += chunks * 20;
        await sleepUntil(t);
        if (socket.readyState !== WebSocket.OPEN) return;
        socket.send(JSON.stringify({ type: "response.done", response_id: id, status: "completed" }));
        t += pattern.gapMs + (pattern.spreadMs ? (17 * b) % pattern.spreadMs : 0);
      }
    },
    async close() {
      stopping = true;
      for (const s of sockets.values()) if (s.readyState === WebSocket.OPEN) s.close(1001);
      await Promise.all(closed);
      await server.shutdown();
    },
  };
}

/**
 * The strictly real-time engine of `testing/realtime_engine.ts` behind the {@link BenchEngine} interface:
 * each chunk leaves when it has been spoken (20 ms after the start of its audio, where {@link startBenchEngine}
 * sends it at that start) and `response.started` goes with the first chunk (not 60 ms ahead of it).
 */
export function startRealtimeBenchEngine(tls: { certPem: string; keyPem: string }): BenchEngine {
  const engine = startRealtimeEngine({ tls, sampleRate: RATE });
  return {
    url: engine.url,
    sessions: engine.sessions,
    talk(sessionId, pattern) {
      const ms = Math.round(pattern.burstMs / 20) * 20;
      const pcm = pattern.sound === "vowel"
        ? vowelBurst(ms)
        : pattern.sound === "speech"
        ? speechBurst(ms)
        : toneBurst(ms);
      return engine.talk(sessionId, {
        pcm,
        bursts: pattern.bursts,
        gapMs: pattern.gapMs,
        spreadMs: pattern.spreadMs,
      });
    },
    close: () => engine.close(),
  };
}
