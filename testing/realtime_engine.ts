/**
 * A V0 conversation engine (protocol V0 over wss) that speaks strictly in real time, as a telephone bridge or
 * a customer's own streaming TTS does: each 20 ms PCM16 chunk leaves when its last sample has been spoken
 * (chunk `i` of a turn that starts speaking at `t0` is sent at `t0 + (i + 1)·20 ms`), and nothing is announced
 * early — `response.started` goes out back to back with the first chunk, never ahead of it. No word timings
 * are sent (audio alone). The project's bench engine (`bench/engine.ts`) announces each turn 60 ms before its
 * audio, which gives the service a look-ahead this engine does not; the benches run both to show the
 * difference.
 *
 * It records when each chunk and each announcement left, so a bench can time a chunk to the sound heard.
 * Sounds are passed in (the caller chooses a vowel, a tone or speech), so this helper loads no TTS.
 *
 * @module
 */

/** One sent chunk. */
export interface RealtimeSentChunk {
  responseId: string;
  /** Index of the chunk within its response. */
  index: number;
  /** `performance.timeOrigin + performance.now()` when it was sent. */
  sentAt: number;
}

/** A session as the engine sees it. */
export interface RealtimeEngineSession {
  sessionId: string;
  sent: RealtimeSentChunk[];
  /** When each response was announced (`response.started` sent), by response id. */
  announcedAt: Map<string, number>;
  userAudioBytes: number;
}

/** What to speak: `bursts` turns of `pcm`, separated by `gapMs` of silence (plus a spread, see below). */
export interface RealtimeTalk {
  /** One turn's audio, mono PCM16 at the engine's sample rate (a partial last chunk is padded with silence). */
  pcm: Int16Array;
  bursts: number;
  /** Silence between the end of one turn's audio and the start of the next, ms. */
  gapMs: number;
  /** Gaps longer by `17·b mod spreadMs` ms for turn `b`, so turns start at every frame phase (default 0). */
  spreadMs?: number;
}

/** A running real-time engine. */
export interface RealtimeEngine {
  /** `wss://localhost:<port>/v0` (the certificate is the one passed in). */
  url: string;
  /** The engine's sample rate, Hz. */
  sampleRate: number;
  sessions: Map<string, RealtimeEngineSession>;
  /** Speaks on a session in real time; resolves when the last turn's `response.done` was sent. */
  talk(sessionId: string, talk: RealtimeTalk): Promise<void>;
  close(): Promise<void>;
}

/** Options of {@link startRealtimeEngine}. */
export interface RealtimeEngineOptions {
  tls: { certPem: string; keyPem: string };
  /** Output sample rate announced in `session.ready` (default 24000). */
  sampleRate?: number;
}

const CHUNK_MS = 20;

/** The wall clock with sub-millisecond precision, comparable across processes. */
function wallNow(): number {
  return performance.timeOrigin + performance.now();
}

function sleepUntil(t: number): Promise<void> {
  return new Promise((r) => setTimeout(r, Math.max(0, t - wallNow())));
}

/**
 * Starts the engine on 127.0.0.1.
 *
 * @example
 * ```ts ignore
 * const engine = startRealtimeEngine({ tls });
 * // … create a session whose external_engine url is engine.url, wait for it to connect …
 * await engine.talk(sessionId, { pcm: vowel400ms, bursts: 20, gapMs: 600, spreadMs: 40 });
 * const firstChunks = engine.sessions.get(sessionId)!.sent.filter((c) => c.index === 0);
 * await engine.close();
 * ```
 */
export function startRealtimeEngine(options: RealtimeEngineOptions): RealtimeEngine {
  const rate = options.sampleRate ?? 24000;
  const chunk = Math.round(rate * CHUNK_MS / 1000);
  const sockets = new Map<string, WebSocket>();
  const sessions = new Map<string, RealtimeEngineSession>();
  const closed: Promise<void>[] = [];
  let stopping = false;
  const server = Deno.serve(
    {
      hostname: "127.0.0.1",
      port: 0,
      cert: options.tls.certPem,
      key: options.tls.keyPem,
      onListen: () => {},
    },
    (req) => {
      const { socket, response } = Deno.upgradeWebSocket(req, { protocol: "avatar-engine.v0" });
      closed.push(new Promise((r) => socket.addEventListener("close", () => r(), { once: true })));
      socket.binaryType = "arraybuffer";
      let session: RealtimeEngineSession | null = null;
      socket.onmessage = (e) => {
        if (typeof e.data !== "string") {
          if (session) session.userAudioBytes += (e.data as ArrayBuffer).byteLength;
          return;
        }
        let msg: Record<string, unknown>;
        try {
          msg = JSON.parse(e.data);
        } catch {
          return;
        }
        if (msg.type === "session.start") {
          const id = String(msg.session_id);
          session = { sessionId: id, sent: [], announcedAt: new Map(), userAudioBytes: 0 };
          sessions.set(id, session);
          sockets.set(id, socket);
          socket.send(JSON.stringify({
            type: "session.ready",
            session_id: id,
            engine_session_id: `realtime_${sessions.size}`,
            audio: { output: { encoding: "pcm_s16le", sample_rate: rate, channels: 1 } },
          }));
        } else if (msg.type === "ping") socket.send(JSON.stringify({ type: "pong", id: msg.id }));
        else if (msg.type === "session.end") socket.close(1000);
      };
      return response;
    },
  );
  return {
    url: `wss://localhost:${server.addr.port}/v0`,
    sampleRate: rate,
    sessions,
    async talk(sessionId, talk) {
      const socket = sockets.get(sessionId);
      const session = sessions.get(sessionId);
      if (!socket || !session) throw new Error(`unknown session ${sessionId}`);
      const chunks = Math.ceil(talk.pcm.length / chunk);
      const padded = new Int16Array(chunks * chunk);
      padded.set(talk.pcm);
      // t0: when the turn's first sample is spoken; its chunk exists 20 ms later.
      let t0 = wallNow() + CHUNK_MS;
      for (let b = 0; b < talk.bursts && !stopping; b++) {
        const id = `r_${b}`;
        for (let i = 0; i < chunks; i++) {
          await sleepUntil(t0 + (i + 1) * CHUNK_MS);
          if (socket.readyState !== WebSocket.OPEN) return;
          if (i === 0) {
            socket.send(JSON.stringify({ type: "response.started", response_id: id }));
            session.announcedAt.set(id, wallNow());
          }
          socket.send(padded.slice(i * chunk, (i + 1) * chunk).buffer);
          session.sent.push({ responseId: id, index: i, sentAt: wallNow() });
        }
        if (socket.readyState !== WebSocket.OPEN) return;
        socket.send(JSON.stringify({ type: "response.done", response_id: id, status: "completed" }));
        t0 += chunks * CHUNK_MS + talk.gapMs + (talk.spreadMs ? (17 * b) % talk.spreadMs : 0);
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
