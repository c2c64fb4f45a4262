/**
 * Every session's figures, measured where they happen (docs/media-plane.md, "Per-session figures").
 *
 * The **players** measure what only a client can see and report it over their socket (`player_stats`,
 * {@link parsePlayerReport}): connect → first frame, frame made → presented, the mouth (a presented frame)
 * vs its sound leaving the player, stalls and catch-ups. The **service** measures the rest here: the
 * engine's connection time, and each turn: the end of the user's speech (an energy detector on the
 * microphone audio as it reaches the service) → the agent's first audio from the engine → its first frame
 * presented at a client (the time that frame is due on the media clock plus the presenting client's
 * measured frame latency). The turn latency is split into the engine's share (speech end → first audio)
 * and the avatar's (first audio → first frame presented, `avatar_latency_ms`, measured for every response,
 * the greeting too).
 *
 * All times are on one monotonic clock (`performance.now()` by default, injectable). A
 * {@link SessionMetrics} lives in the worker's memory for the session's life; `registry.ts` flushes its
 * snapshots to KV, and the final one is written with the session's end (the `session.ended` webhook's
 * `metrics`).
 *
 * @module
 */
import type { PlaybackKind, SessionMetricsSnapshot } from "../vocabulary/schemas.ts";
import { Distribution } from "./distribution.ts";

/** A validated `player_stats` message (counters are deltas since the client's previous report). */
export interface PlayerReport {
  playback: PlaybackKind;
  /** Connect → first frame presented, on this connection (only in a connection's first reports). */
  firstFrameMs: number | null;
  /** Frame made (due on the media clock) → presented, one value per presented frame sampled. */
  frameLatencyMs: number[];
  /** A presented frame's display time − the time its sound leaves the player (+: picture late). */
  avOffsetMs: number[];
  presentedFrames: number;
  droppedFrames: number;
  stalls: number;
  stallMs: number;
  catchUps: number;
  skippedMs: number;
  /** Time from the end of the last stall to playing at the live edge again. */
  catchUpMs: number | null;
  audioUnderrunMs: number;
}

/** Samples of one kind a report may carry (more are ignored). */
export const MAX_REPORT_SAMPLES = 256;

const PLAYBACK: readonly PlaybackKind[] = ["webcodecs", "mse", "webrtc"];

/** A finite number within [min, max], or null (anything else is not a measure). */
function num(v: unknown, min: number, max: number): number | null {
  return typeof v === "number" && Number.isFinite(v) && v >= min && v <= max ? v : null;
}

function samples(v: unknown, min: number, max: number): number[] {
  if (!Array.isArray(v)) return [];
  const out: number[] = [];
  for (const x of v.slice(0, MAX_REPORT_SAMPLES)) {
    const n = num(x, min, max);
    if (n !== null) out.push(n);
  }
  return out;
}

/**
 * Reads a client's `player_stats` message (already JSON-parsed); null when it is not one. Values out of
 * bounds are left out (latencies 0–60 s, offsets ±10 s, counters 0–10⁶, at most {@link MAX_REPORT_SAMPLES}
 * samples of a kind), so a client cannot make the figures absurd or the memory grow.
 */
export function parsePlayerReport(msg: unknown): PlayerReport | null {
  if (msg === null || typeof msg !== "object") return null;
  const m = msg as Record<string, unknown>;
  if (m.type !== "player_stats") return null;
  const count = (v: unknown) => Math.round(num(v, 0, 1e6) ?? 0);
  const ms = (v: unknown) => num(v, 0, 3_600_000) ?? 0;
  return {
    playback: PLAYBACK.includes(m.playback as PlaybackKind) ? m.playback as PlaybackKind : "other",
    firstFrameMs: num(m.first_frame_ms, 0, 600_000),
    frameLatencyMs: samples(m.frame_latency_ms, 0, 60_000),
    avOffsetMs: samples(m.av_offset_ms, -10_000, 10_000),
    presentedFrames: count(m.presented_frames),
    droppedFrames: count(m.dropped_frames),
    stalls: count(m.stalls),
    stallMs: ms(m.stall_ms),
    catchUps: count(m.catch_ups),
    skippedMs: ms(m.skipped_ms),
    catchUpMs: num(m.catch_up_ms, 0, 600_000),
    audioUnderrunMs: ms(m.audio_underrun_ms),
  };
}

/** Detects the end of the user's speech in the microphone audio that reaches the service. */
class SpeechEnd {
  #rate = 0;
  #frame = 0;
  #sum = 0;
  #n = 0;
  #floor = 0;
  #voicedRun = 0;
  /** When the last voiced frame of a speech run (≥ 100 ms voiced) ended; null before any. */
  lastEnd: number | null = null;

  /** PCM16LE mono at `rate` Hz that arrived at `at` (the end of the chunk). */
  push(pcm: Uint8Array, rate: number, at: number): void {
    if (rate !== this.#rate) {
      this.#rate = rate;
      this.#frame = Math.max(1, Math.round(rate / 50)); // 20 ms
      this.#sum = 0;
      this.#n = 0;
    }
    const dv = new DataView(pcm.buffer, pcm.byteOffset, pcm.byteLength);
    const total = pcm.length >> 1;
    for (let i = 0; i < total; i++) {
      const s = dv.getInt16(i * 2, true);
      this.#sum += s * s;
      if (++this.#n < this.#frame) continue;
      const rms = Math.sqrt(this.#sum / this.#n);
      this.#sum = 0;
      this.#n = 0;
      const frameEnd = at - ((total - 1 - i) * 1000) / rate;
      const voiced = rms > Math.max(500, this.#floor * 3);
      if (voiced) {
        this.#voicedRun++;
        if (this.#voicedRun >= 5) this.lastEnd = frameEnd;
      } else {
        this.#voicedRun = 0;
        this.#floor = this.#floor === 0 ? rms : this.#floor * 0.95 + rms * 0.05;
      }
    }
  }
}

/** A response on its way to the user. */
interface PendingResponse {
  /** First audio from the engine. */
  engineAt: number;
  /** End of the user's speech it answers, if known. */
  userEndAt: number | null;
  /** When its first sample is due on the media clock (the frame with it is made then). */
  dueAt: number | null;
  /** Where the avatar's share starts: the first audio, or a viewer connecting if the speech waited. */
  avatarFrom: number;
}

/** Responses waiting for their first frame to be presented (older ones are dropped). */
const MAX_PENDING = 64;
/** A speech end this long before the agent's first audio is not that turn's. */
const MAX_TURN_GAP_MS = 30_000;

/** One session's figures while it runs (see the module documentation). */
export class SessionMetrics {
  readonly #now: () => number;
  readonly #wallNow: () => number;
  readonly #turn = new Distribution(0, 600_000);
  readonly #engine = new Distribution(0, 600_000);
  readonly #avatar = new Distribution(0, 600_000);
  readonly #av = new Distribution(-10_000, 10_000);
  readonly #frame = new Distribution(0, 60_000);
  readonly #speech = new SpeechEnd();
  readonly #pending = new Map<string, PendingResponse>();
  readonly #seen = new Set<string>();
  readonly #playback = new Set<PlaybackKind>();
  #lastPairedEnd = -Infinity;
  /** Since when a client has been connected (null: none now). */
  #viewerSince: number | null = null;
  #firstFrame: number | null = null;
  #engineConnect: number | null = null;
  #stalls = { count: 0, total_ms: 0 };
  #catchUps = { count: 0, skipped_ms: 0, last_ms: null as number | null };
  #frames = { presented: 0, dropped: 0 };
  #underrun = 0;
  #reports = 0;
  #updatedAt: number | null = null;
  /** Changes with every update (the registry flushes what changed). */
  version = 0;

  constructor(
    readonly sessionId: string,
    readonly projectId: string,
    clocks: { now?: () => number; wallNow?: () => number } = {},
  ) {
    this.#now = clocks.now ?? (() => performance.now());
    this.#wallNow = clocks.wallNow ?? (() => Date.now());
  }

  /** The clock these figures are measured on (ms). */
  now(): number {
    return this.#now();
  }

  #touch(): void {
    this.version++;
    this.#updatedAt = this.#wallNow();
  }

  /** The conversation engine took `ms` to connect (its handshake included). */
  engineConnected(ms: number): void {
    this.#engineConnect = Math.round(ms);
    this.#touch();
  }

  /** The user's microphone audio reaching the service now (PCM16LE mono at `rate`). */
  userAudio(pcm: Uint8Array, rate: number): void {
    this.#speech.push(pcm, rate, this.#now());
  }

  /** Audio of `responseId` arrived from the engine now (its first chunk starts the response's clock). */
  agentAudio(responseId: string): void {
    if (this.#seen.has(responseId)) return;
    this.#seen.add(responseId);
    if (this.#seen.size > 4 * MAX_PENDING) this.#seen.delete(this.#seen.values().next().value!);
    const at = this.#now();
    const end = this.#speech.lastEnd;
    let userEndAt: number | null = null;
    if (end !== null && end > this.#lastPairedEnd && end <= at && at - end <= MAX_TURN_GAP_MS) {
      userEndAt = end;
      this.#lastPairedEnd = end;
    }
    this.#pending.set(responseId, { engineAt: at, userEndAt, dueAt: null, avatarFrom: at });
    if (this.#pending.size > MAX_PENDING) this.#pending.delete(this.#pending.keys().next().value!);
  }

  /** The number of connected clients changed (speech waits while there is none). */
  clientsChanged(count: number): void {
    if (count === 0) this.#viewerSince = null;
    else this.#viewerSince ??= this.#now();
  }

  /**
   * The first sample of `responseId` is due (heard on the media clock) at `dueAt` (this clock). Speech
   * that waited for a viewer counts for the avatar from when one connected.
   */
  speechPlaced(responseId: string, dueAt: number): void {
    const p = this.#pending.get(responseId);
    if (!p || p.dueAt !== null) return;
    if (this.#viewerSince !== null && this.#viewerSince > p.engineAt) p.avatarFrom = this.#viewerSince;
    // Speech is not heard before it arrived and a viewer was there: a pump that ran late (a busy event loop)
    // places it on a media clock already past.
    p.dueAt = Math.max(dueAt, p.avatarFrom);
  }

  /** A client's report: its own measures, and the presentation of the responses due before it. */
  playerReport(report: PlayerReport): void {
    const at = this.#now();
    this.#reports++;
    this.#playback.add(report.playback);
    if (report.firstFrameMs !== null && this.#firstFrame === null) {
      this.#firstFrame = Math.round(report.firstFrameMs);
    }
    for (const v of report.frameLatencyMs) this.#frame.add(v);
    for (const v of report.avOffsetMs) this.#av.add(v);
    this.#frames.presented += report.presentedFrames;
    this.#frames.dropped += report.droppedFrames;
    this.#stalls.count += report.stalls;
    this.#stalls.total_ms += Math.round(report.stallMs);
    this.#catchUps.count += report.catchUps;
    this.#catchUps.skipped_ms += Math.round(report.skippedMs);
    if (report.catchUpMs !== null) this.#catchUps.last_ms = Math.round(report.catchUpMs);
    this.#underrun += Math.round(report.audioUnderrunMs);
    // A response's first frame was presented at its due time plus the frame latency this client measured.
    const sorted = [...report.frameLatencyMs].sort((a, b) => a - b);
    const latency = sorted.length ? sorted[Math.floor(sorted.length / 2)] : null;
    if (latency !== null) {
      for (const [id, p] of this.#pending) {
        if (p.dueAt === null || p.dueAt + latency > at) continue;
        const presentedAt = p.dueAt + latency;
        this.#avatar.add(presentedAt - p.avatarFrom);
        if (p.userEndAt !== null) {
          this.#turn.add(presentedAt - p.userEndAt);
          this.#engine.add(p.engineAt - p.userEndAt);
        }
        this.#pending.delete(id);
      }
    }
    this.#touch();
  }

  /** The figures now. */
  snapshot(): SessionMetricsSnapshot {
    return {
      session_id: this.sessionId,
      first_frame_ms: this.#firstFrame,
      engine_connect_ms: this.#engineConnect,
      turn_latency_ms: this.#turn.summary(),
      engine_latency_ms: this.#engine.summary(),
      avatar_latency_ms: this.#avatar.summary(),
      av_offset_ms: this.#av.summary(),
      frame_latency_ms: this.#frame.summary(),
      stalls: { ...this.#stalls },
      catch_ups: { ...this.#catchUps },
      frames: { ...this.#frames },
      audio_underrun_ms: this.#underrun,
      playback: [...this.#playback].sort(),
      player_reports: this.#reports,
      updated_at: this.#updatedAt,
    };
  }
}
