/**
 * The audio playout of one session: the avatar's speech queued, laid on the media timeline in blocks
 * with silence between responses, and encoded to Opus; the encoded packets go to the fan-out.
 *
 * Audio is written in blocks of {@link AUDIO_BLOCK} samples (20 ms, exactly one Opus packet, so every block
 * is encoded at once; the blocks start {@link AUDIO_GRID_OFFSET} into the timeline, a quarter frame off the
 * frames' grid) and kept between one and {@link MAX_LEAD_BLOCKS} blocks ahead of the clock: silence fills
 * the gaps (one to two blocks ahead: that is how long arriving speech waits to be placed), speech is
 * written as soon as a whole block of it is queued and at most that far ahead, so barge-in can only leave
 * that much already-encoded speech behind. A response's first audio shorter than a block ends the next
 * block (it is not held back for the rest of a block). A response still speaking whose next chunk has not
 * come gets its silence only when it is due ({@link OPEN_SILENCE_LEAD_PACED_MS} ahead over a transport that
 * paces its sending): a real-time engine's chunk may be 20–40 ms late without a gap. With a hold
 * (`SVC_LIPSYNC_HOLD_MS`, default 0) a response's first block waits until that much of it is queued (or all
 * of it), which buys lip sync look-ahead with latency when the engine speaks in real time.
 *
 * Over a paced transport (the SFU: each packet held until 10 ms before it is due) the silence is written
 * further ahead (to last past the next frame's tick), and a response's first speech does not wait behind it:
 * it takes the place of the silence not sent yet: it starts on the first instant of a frame
 * {@link AudioPlayout.speechLeadMs} ahead of the clock (15 ms, more when the engine's chunks have come late;
 * {@link onsetAt}), inside the block that holds it, the packets of that silence dropped unsent (they are
 * repeats of the silent packet, which libopus never saw: the stream goes on exactly as if they had not been
 * made; {@link OpusEncoder.retract}). The SFU sends those repeats as Opus DTX frames (`dtxFrame`).
 *
 * Speech waits in the queue while no client is connected (nobody would hear it), then plays. The lead
 * rules are all in {@link AudioPlayout.pump}: an onset-aware lead is a change there and in
 * {@link AudioPlayout.wakeAt}.
 *
 * @module
 */
import type { SessionMetrics } from "../../metrics/session_metrics.ts";
import { AUDIO_RATE } from "../ffmpeg.ts";
import type { SessionFace } from "../lipsync/session_face.ts";
import type { OpusHead } from "../ogg_opus.ts";
import { OPUS_FRAME, type OpusBackend, OpusEncoder } from "../opus_encoder.ts";
import { PlayoutQueue } from "../playout_queue.ts";
import { LinearResampler } from "../resample.ts";
import type { EncodedAudioPacket } from "../transports/transport.ts";
import { AudioRing } from "./audio_ring.ts";
import type { ClockDriven, MediaClock } from "./media_clock.ts";

/**
 * Samples of audio written (and encoded) at a time: one 20 ms Opus packet, so every block is encoded at
 * once and nothing waits inside the encoder.
 */
export const AUDIO_BLOCK = OPUS_FRAME;
/**
 * Where the audio blocks start on the timeline (samples): half a block, so blocks begin a quarter of a frame
 * (10 ms at 25 fps) off the video frames' starts and middles. Speech that fills whole blocks (an engine's
 * 20 ms chunks) starts on a block, so a response's first sound lies 10 ms inside the half frame either side
 * of a frame's start — never on the edge where the frame that opens the mouth (its face is taken at its
 * middle) and the frame a player shows at the sound's start (the one whose start is nearest it) could be
 * two different frames, one sample of codec smear apart.
 */
export const AUDIO_GRID_OFFSET = AUDIO_BLOCK / 2;
/** Audio is kept at most this many blocks ahead of the clock (120 ms). */
export const MAX_LEAD_BLOCKS = 6;
/**
 * While a response is still speaking and its next chunk has not come, silence is written only when it is
 * due: when the block starts on the clock, or over a paced transport (the SFU, whose audio is sent 10 ms
 * before it is due) this long before (ms). Written a block ahead like the silence between responses, a
 * real-time engine's chunk 0–20 ms late (by where its response fell on the block grid) cut 20 ms of silence
 * into the speech.
 */
export const OPEN_SILENCE_LEAD_PACED_MS = 15;
/** The lead of a response's first speech over a paced transport is at most this (ms; {@link AudioPlayout.speechLeadMs}). */
export const MAX_SPEECH_LEAD_PACED_MS = 80;
/** The engine's lateness is the worst of its last this many responses. */
export const LATENESS_RESPONSES = 8;
/** Queued speech is bounded to 30 s (the engine protocol's bound); older audio is dropped. */
export const MAX_QUEUED_SECONDS = 30;

/** Hooks for measurements (the bench); never needed in production. */
export interface SpeechObserver {
  /** `n` speech samples (counted from the first one ever queued) were placed at timeline sample `at`. */
  speechPlaced?(speechIndex: number, at: number, n: number): void;
}

/** What the audio playout is built from. */
export interface AudioPlayoutDeps {
  clock: MediaClock;
  /** The face: told where speech lands on the timeline (lip sync). */
  face: SessionFace;
  /** Clients connected now (speech waits for one). */
  clients(): number;
  /** The transport paces its sending to the media clock (its registry entry says so). */
  paced: boolean;
  /** Rate of the engine's audio. */
  engineRate: number;
  /** Speech held back at the start of a response for lip sync's look-ahead, samples at 48 kHz. */
  hold: number;
  /** Opus bitrate, bits per second, and which libopus encodes. */
  bitrate: number;
  backend?: OpusBackend;
  /** An encoded packet (to the fan-out). */
  packet(packet: EncodedAudioPacket): void;
  /**
   * The `pts` from which every packet given out is still unsent (a paced transport holds them until due);
   * `Infinity` when none can be taken back. Without it, none can.
   */
  unsentFrom?(): number;
  /** Takes back the packets from `pts` on, all unsent (see {@link unsentFrom}). */
  retract?(pts: number): void;
  /** The engine is told what of a response was played. */
  reportPlayed(responseId: string, ms: number, interrupted: boolean): void;
  metrics?: SessionMetrics;
  observer?: SpeechObserver;
}

/** The audio playout of one session. */
export class AudioPlayout implements ClockDriven {
  readonly #d: AudioPlayoutDeps;
  readonly queue: PlayoutQueue;
  readonly #resampler: LinearResampler;
  /** The engine's chunk at the encoder's rate, on its way into the queue (which copies it). */
  #resampled = new Int16Array(0);
  readonly #ring = new AudioRing(AUDIO_BLOCK * 25, AUDIO_GRID_OFFSET);
  readonly #opusEnc: OpusEncoder;
  /** The Opus identification header of the audio track. */
  readonly opus: OpusHead;
  /** Timeline position written so far, samples at 48 kHz. */
  #written = AUDIO_GRID_OFFSET;
  #speechUntil = 0;
  #speechTaken = 0;
  /** The response whose first sample was placed last (its placement is reported once). */
  #placedResponse: string | null = null;
  /**
   * The write position whose silence (a response still speaking, its next chunk not there) was found due
   * and held back for one turn of the event loop (see {@link AudioPlayout.pump}).
   */
  #heldAt = -1;
  /** Position of the next encoded audio packet, 48 kHz samples of the encoder's output. */
  #audioPts = AUDIO_GRID_OFFSET;
  #closed = false;
  readonly stats = { audioBlocks: 0, audioUnderruns: 0, audioRetracted: 0 };
  /** The response whose chunks are arriving: when its first came, the audio since (ms), its worst lateness. */
  #arrival: { responseId: string; t0: number; ms: number; late: number } | null = null;
  /** The worst lateness of each of the last {@link LATENESS_RESPONSES} responses (ms). */
  readonly #lateness: number[] = [];

  constructor(deps: AudioPlayoutDeps) {
    this.#d = deps;
    this.queue = new PlayoutQueue({
      sampleRate: AUDIO_RATE,
      maxSamples: MAX_QUEUED_SECONDS * AUDIO_RATE,
      onPlayed: (id, ms, interrupted) => deps.reportPlayed(id, ms, interrupted),
    });
    this.#resampler = new LinearResampler(deps.engineRate, AUDIO_RATE);
    this.#opusEnc = new OpusEncoder(deps.bitrate, { backend: deps.backend, sourceRate: deps.engineRate });
    this.opus = this.#opusEnc.head;
  }

  /** Timeline position written so far, samples at 48 kHz. */
  get written(): number {
    return this.#written;
  }

  /** The engine's audio of a response: resampled to 48 kHz, queued, and written as the lead rules allow. */
  push(pcm: Int16Array, responseId: string): void {
    const need = this.#resampler.maxOutput(pcm.length);
    if (this.#resampled.length < need) this.#resampled = new Int16Array(Math.max(need, 2 * AUDIO_BLOCK));
    const n = this.#resampler.into(pcm, this.#resampled);
    this.queue.push(responseId, this.#resampled.subarray(0, n));
    const now = performance.now();
    this.#arrived(responseId, pcm.length * 1000 / this.#d.engineRate, now);
    this.pump(now);
  }

  /**
   * A chunk of `ms` of a response's audio arrived at `now`: how late it is against its response's first
   * chunk and the audio between (an engine speaking in real time sends each chunk as it is spoken; one
   * ahead of real time is never late).
   */
  #arrived(responseId: string, ms: number, now: number): void {
    const a = this.#arrival;
    if (a && a.responseId === responseId) {
      a.late = Math.max(a.late, now - (a.t0 + a.ms));
      a.ms += ms;
      return;
    }
    if (a) {
      this.#lateness.push(a.late);
      if (this.#lateness.length > LATENESS_RESPONSES) this.#lateness.shift();
    }
    this.#arrival = { responseId, t0: now, ms, late: 0 };
  }

  /**
   * How far ahead of the clock a response's first speech goes at least over a paced transport (ms): the
   * worst lateness of the engine's chunks in its last {@link LATENESS_RESPONSES} responses, plus
   * {@link OPEN_SILENCE_LEAD_PACED_MS} (when silence is written for a chunk that has not come), so that a chunk
   * as late as that still comes in time; up to {@link MAX_SPEECH_LEAD_PACED_MS}. An engine that sends ahead of
   * real time is never late: 15 ms.
   */
  speechLeadMs(): number {
    const late = this.#lateness.length ? Math.max(0, ...this.#lateness) : 0;
    return Math.min(MAX_SPEECH_LEAD_PACED_MS, OPEN_SILENCE_LEAD_PACED_MS + late);
  }

  tick(now: number): void {
    this.pump(now, true);
  }

  /** When audio next needs attention (`performance.now()` time). */
  wakeAt(): number {
    const queued = this.#d.clients() > 0 && !this.queue.headHeld(this.#d.hold) ? this.queue.length : 0;
    let due: number; // timeline sample at which audio needs attention
    if (queued >= AUDIO_BLOCK || (queued > 0 && this.queue.settled)) {
      due = this.#written + AUDIO_BLOCK - MAX_LEAD_BLOCKS * AUDIO_BLOCK; // room for another speech block
    } else if (queued > 0) due = this.#written; // speech is late: an underrun is near
    else if (this.#speaking()) due = this.#written - this.#openLead(); // its next chunk is on its way
    else due = this.#written - AUDIO_BLOCK; // keep a block of silence ahead
    return this.#d.clock.timeOfSample(due);
  }

  /** Whether the response playing goes on: placed, open (more of it is expected), its clients there. */
  #continuing(): boolean {
    const id = this.#placedResponse;
    return id !== null && this.#d.clients() > 0 && this.queue.expected(id) !== null;
  }

  /** Whether the response playing is still speaking with nothing of it queued: its next chunk is on its way. */
  #speaking(): boolean {
    return this.queue.length === 0 && this.#continuing();
  }

  /** How far ahead of the clock silence is written while a response is still speaking (samples). */
  #openLead(): number {
    return this.#d.paced ? OPEN_SILENCE_LEAD_PACED_MS * AUDIO_RATE / 1000 : 0;
  }

  /**
   * Writes audio blocks as the lead rules allow (see the module documentation): silence is kept between
   * one and two blocks (21–43 ms) ahead of the clock — speech that arrives is placed right after it, so
   * that is the speech's wait — except while a response is still speaking and its next chunk has not come:
   * then silence is written only when due ({@link OPEN_SILENCE_LEAD_PACED_MS}), the face of a frame taken
   * beyond what is written holding its mouth until the chunk comes or the silence is written. Over a paced
   * transport (the SFU) a clock tick tops the silence up to last until the next frame: every packet is
   * encoded well before its send time, so the pace the browser's jitter buffer sees stays regular (packets
   * a few ms late for their pace made it buffer, and delay the pictures with the sound).
   */
  pump(now: number, tick = false): void {
    const clock = this.#d.clock;
    if (this.#closed || !clock.running) return;
    const nowS = clock.sampleAt(now);
    const gate = this.#d.clients() > 0;
    const silenceLead = AUDIO_BLOCK + (tick && this.#d.paced ? clock.samplesPerFrame : 0);
    /** Over a paced transport, where a response's first speech starting now goes (silence pads up to it). */
    let startAt = -Infinity;
    if (
      gate && this.#d.paced && this.queue.length > 0 && !this.queue.headHeld(this.#d.hold) &&
      this.queue.headResponse() !== this.#placedResponse
    ) startAt = this.#speechStart(nowS);
    // Blocks are written in place in the ring (no allocation per block) and encoded from it after the
    // timeline knows them; at most the ring's blocks less one per call, so none is overwritten first.
    const ring = this.#ring;
    const from = this.#written;
    for (let guard = 0; guard < ring.blocks(AUDIO_BLOCK) - 1; guard++) {
      const avail = gate && !this.queue.headHeld(this.#d.hold) ? this.queue.length : 0;
      const head = avail > 0 ? this.queue.headResponse() : null;
      const starts = head !== null && head !== this.#placedResponse;
      let kind: "whole" | "first" | "late" | "silence";
      /** Silence before a response's first speech in this block (it starts at `startAt`). */
      const skip = starts ? Math.max(0, startAt - this.#written) : 0;
      if (skip >= AUDIO_BLOCK) kind = "silence";
      else if (avail >= AUDIO_BLOCK - skip || (avail > 0 && this.queue.settled)) {
        if (this.#written + AUDIO_BLOCK > nowS + MAX_LEAD_BLOCKS * AUDIO_BLOCK) break;
        kind = "whole";
      } else if (avail > 0 && starts) {
        if (this.#written + AUDIO_BLOCK > nowS + MAX_LEAD_BLOCKS * AUDIO_BLOCK) break;
        kind = "first";
      } else if (avail > 0) {
        if (this.#written > nowS) break;
        kind = "late";
      } else if (this.#speaking()) {
        // Its next chunk is on its way: silence only when due (an underrun, if it is written).
        if (this.#written > nowS + this.#openLead()) break;
        if (this.#heldAt !== this.#written) {
          // Due now; but after the event loop was held up (a busy process), its expired timers run before
          // the socket's messages that came meanwhile: the chunk may be here, unread. One turn later (the
          // clock's next wake-up, already due, comes after them), the silence is written if it is not.
          this.#heldAt = this.#written;
          break;
        }
        kind = "silence";
        this.stats.audioUnderruns++;
      } else if (this.#written >= nowS + silenceLead) {
        break;
      } else kind = "silence";
      const block = ring.block(this.#written, AUDIO_BLOCK);
      block.fill(0);
      let speech = 0;
      /** Where in the block the speech starts. */
      let at = 0;
      if (kind === "whole") {
        at = skip;
        speech = this.queue.take(block, at, AUDIO_BLOCK - at, this.#placed);
      } else if (kind === "first") {
        // A response's first audio, less than the rest of a block: it ends the block (silence before it), so
        // it plays without waiting for the rest of a block and the blocks after it stay whole.
        at = AUDIO_BLOCK - avail;
        speech = this.queue.take(block, at, avail, this.#placed);
      } else if (kind === "late") {
        speech = this.queue.take(block, 0, avail, this.#placed);
        this.stats.audioUnderruns++;
      }
      if (speech > 0 && starts) {
        // The response's first sample is due (heard on the media clock) here.
        this.#placedResponse = head;
        this.#d.metrics?.speechPlaced(head, clock.timeOfSample(this.#written + at));
      }
      if (speech > 0) {
        this.#d.observer?.speechPlaced?.(this.#speechTaken, this.#written + at, speech);
        this.#speechTaken += speech;
        this.#speechUntil = this.#written + at + speech;
      }
      this.#written += AUDIO_BLOCK;
      this.stats.audioBlocks++;
    }
    if (this.#written > from) this.#d.face.timeline.written(this.#written);
    this.showQueued();
    for (let p = from; p < this.#written; p += AUDIO_BLOCK) {
      this.#opusEnc.encode(ring.block(p, AUDIO_BLOCK), this.#onPacket);
    }
  }

  /**
   * Where a response's first speech goes over a paced transport (a timeline sample, not necessarily on the
   * block grid): the first instant of a frame ({@link onsetAt}) at least {@link speechLeadMs} ahead of the
   * clock. Silence written beyond the block holding it and not sent yet is taken back, so the speech goes
   * there instead of after it — only what nothing has used: packets the transport still holds, that libopus
   * did not code (repeats of the silent packet: its state is as before them, so the stream goes on exactly as
   * if they had never been made), on frames whose face is not decided yet (a sound's mouth is the frame whose
   * instant is nearest it: that frame must not have been rendered). Silence written short of it is padded up
   * to it (the lead is what the engine's next chunks may be late by); the block holding it is silence up to
   * it ({@link AudioPlayout.pump}).
   */
  #speechStart(nowS: number): number {
    const clock = this.#d.clock;
    const spf = clock.samplesPerFrame;
    const written = this.#written;
    const earliest = Math.max(nowS + this.speechLeadMs() * AUDIO_RATE / 1000, (clock.nextFrame - 0.5) * spf);
    /** From here on what is written may be taken back (`written` or beyond: nothing may). */
    const retractable = Math.max(
      written - this.#opusEnc.repeatRun * AUDIO_BLOCK,
      this.#d.unsentFrom?.() ?? Infinity,
    );
    const start = onsetAt(Math.max(earliest, Math.min(retractable, written)), spf);
    const at = blockStart(start);
    if (at >= written) return start;
    if (!this.#opusEnc.retract((written - at) / AUDIO_BLOCK)) {
      return onsetAt(Math.max(earliest, written), spf);
    }
    this.#d.retract!(at);
    this.stats.audioRetracted += (written - at) / AUDIO_BLOCK;
    this.#written = at;
    this.#audioPts = at;
    this.#heldAt = -1;
    this.#d.face.timeline.rewind(at);
    return start;
  }

  /**
   * Tells the face where the speech still queued will play: the playout writes the playing response's
   * queued samples contiguously from its write position (whole blocks as they fill, the rest when the clock
   * needs it), so a frame rendered before they are written still shows their mouth (the face of a frame is
   * taken half a frame ahead of the clock, and an engine speaking in real time has its speech written only
   * 0–20 ms ahead of it).
   */
  showQueued(): void {
    const face = this.#d.face;
    const run = this.#d.clients() > 0 && !this.queue.headHeld(this.#d.hold) ? this.queue.headRun() : null;
    if (run === null && this.#speaking()) {
      // Nothing queued of a response still speaking: its next block is on its way. Until it comes (or the
      // silence is written) a face taken there holds the last mouth decided (its visemes are not known yet).
      const id = this.#placedResponse!;
      face.timeline.queued(
        { responseId: id, from: this.queue.expected(id)!, at: this.#written, n: AUDIO_BLOCK },
        true,
      );
      return;
    }
    const id = this.#placedResponse;
    face.timeline.queued(
      run && run.responseId === id
        ? { responseId: run.responseId, from: run.from, at: this.#written, n: run.n }
        : null,
      false,
      this.#continuing(),
    );
  }

  /** Whether the avatar is speaking at timeline sample `s` (speech written past it, or queued for clients). */
  speakingAt(s: number): boolean {
    return this.#speechUntil > s || (this.#d.clients() > 0 && this.queue.length > 0);
  }

  /** Audio of the timeline at [start, start + n): written samples from the ring, then queued speech. */
  timeline(start: number, n: number): Int16Array {
    const out = new Int16Array(n);
    this.#ring.read(out, start, this.#written);
    if (start + n > this.#written && this.#d.clients() > 0) {
      const from = Math.max(start, this.#written);
      this.queue.peek(out, from - start, from - this.#written, start + n - from);
    }
    return out;
  }

  /** Speech taken from the queue into the block being written (at `outAt` in it). */
  #placed = (id: string, from: number, outAt: number, n: number): void =>
    this.#d.face.placed(id, from, this.#written + outAt, n);

  #onPacket = (data: Uint8Array, samples: number, repeat: boolean): void => {
    const pts = this.#audioPts;
    this.#audioPts += samples;
    this.#d.packet(repeat ? { pts, samples, data, repeat } : { pts, samples, data });
  };

  /** The session stops: the queue is dropped and the encoder released. */
  close(): void {
    this.#closed = true;
    this.queue.clear();
    this.#opusEnc.close();
  }
}

/**
 * The first instant of a video frame (`spf` samples a frame) at or after timeline sample `s`: where over a
 * paced transport a response's first speech starts. A sound's mouth is the frame whose instant is nearest the
 * sound's start, so an onset on a frame's instant opens the mouth in the frame shown as the sound starts
 * (measured over the SFU: mouth vs sound means −11…+4.6 ms in 10 sessions; with the onset in a frame's first
 * half −17…−3, in its second half +15…+21: docs/media-plane.md, SFU "Timing").
 */
export function onsetAt(s: number, spf: number): number {
  return Math.ceil(s / spf) * spf;
}

/** The start of the audio block that holds timeline sample `s` (blocks start on {@link AUDIO_GRID_OFFSET}). */
export function blockStart(s: number): number {
  return AUDIO_GRID_OFFSET + Math.floor((s - AUDIO_GRID_OFFSET) / AUDIO_BLOCK) * AUDIO_BLOCK;
}
