/**
 * The avatar's speech waiting to be played: the engine's responses, already at the encoder's rate, in
 * order. The media clock takes samples from it as they are played; barge-in drops a response's queued
 * samples at once. Each response is reported played (or interrupted) to the engine exactly once.
 *
 * @module
 */

/** A response's playout outcome, for `response.played`. */
export type PlayedReport = (responseId: string, playedMs: number, interrupted: boolean) => void;

/** A run of a response's samples in the ring. */
interface Segment {
  responseId: string;
  /** Ring position (a write counter; the index is `& mask`) of the run's sample 0. */
  start: number;
  /** Samples in the run. */
  n: number;
  /** Samples of the run already taken (or dropped). */
  offset: number;
  /** Position of the run's sample 0 in its response's audio. */
  at: number;
}

/** Where taken samples came from: `n` samples of `responseId` from its sample `from`, written at `outAt`. */
export type TakenSpan = (responseId: string, from: number, outAt: number, n: number) => void;

interface ResponseState {
  id: string;
  done: boolean;
  interrupted: boolean;
  queued: number;
  played: number;
  /** Samples pushed so far (the position of the next one in the response). */
  pushed: number;
  reported: boolean;
}

/** Samples the ring holds to begin with (0.34 s at 48 kHz); it doubles while a response runs ahead. */
export const INITIAL_RING_SAMPLES = 16384;

/**
 * Speech queued for playout, bounded in length (the oldest audio is dropped beyond the bound). The samples
 * are copied into one ring per queue (grown by doubling while an engine runs ahead of the clock, back to
 * its first size once the queue is empty), not held as the arrays pushed: a session speaking at real time
 * then keeps no memory per chunk, and its chunks die young (the arrays' memory is outside the JavaScript
 * heap, and freeing many of them at once held the process up).
 */
export class PlayoutQueue {
  readonly #segments: Segment[] = [];
  readonly #responses = new Map<string, ResponseState>();
  /** Ids of responses already reported (late audio for them is ignored); the last 64 are kept. */
  readonly #finished = new Set<string>();
  #ring = new Int16Array(INITIAL_RING_SAMPLES);
  #mask = INITIAL_RING_SAMPLES - 1;
  /** Ring position of the next sample pushed. */
  #write = 0;
  #queued = 0;
  /** Samples dropped because the queue was full. */
  overflowDropped = 0;
  /** Samples dropped by barge-in. */
  interruptDropped = 0;

  constructor(
    readonly options: { sampleRate: number; maxSamples: number; onPlayed: PlayedReport },
  ) {}

  /** Samples queued. */
  get length(): number {
    return this.#queued;
  }

  /** Samples the ring holds now (its memory is twice that, in bytes). */
  get capacity(): number {
    return this.#ring.length;
  }

  /** True when no queued response can still grow (every queued sample is final). */
  get settled(): boolean {
    for (const r of this.#responses.values()) if (!r.done && !r.interrupted) return false;
    return true;
  }

  /** A response begins. */
  start(responseId: string): void {
    if (!this.#finished.has(responseId)) this.#response(responseId);
  }

  /**
   * Appends audio of a response (ignored after its interruption). The samples are copied: `samples` may be
   * reused by the caller once this returns.
   */
  push(responseId: string, samples: Int16Array): void {
    if (this.#finished.has(responseId)) return;
    const r = this.#response(responseId);
    if (r.interrupted || r.done || samples.length === 0) return;
    // The bound first: the oldest queued audio goes, then (for a push longer than the bound) its own start.
    const max = this.options.maxSamples;
    this.#dropOldest(this.#queued + samples.length - max);
    let skip = 0;
    if (samples.length > max) {
      skip = samples.length - max;
      this.overflowDropped += skip;
    }
    const n = samples.length - skip;
    this.#reserve(n);
    this.#copyIn(samples.subarray(skip), this.#write);
    this.#segments.push({ responseId, start: this.#write, n, offset: 0, at: r.pushed + skip });
    this.#write += n;
    r.pushed += samples.length;
    r.queued += n;
    this.#queued += n;
  }

  /** The engine sent all audio of a response. */
  done(responseId: string): void {
    const r = this.#responses.get(responseId);
    if (!r) return;
    r.done = true;
    this.#settle(r);
  }

  /** Barge-in: drops every queued sample of the response now and reports it interrupted. */
  interrupt(responseId: string): number {
    const r = this.#responses.get(responseId);
    if (!r) return 0;
    let dropped = 0;
    for (let i = this.#segments.length - 1; i >= 0; i--) {
      const s = this.#segments[i];
      if (s.responseId !== responseId) continue;
      dropped += s.n - s.offset;
      this.#segments.splice(i, 1);
    }
    this.#queued -= dropped;
    this.interruptDropped += dropped;
    r.queued = 0;
    r.interrupted = true;
    this.#report(r, true);
    this.#emptied();
    return dropped;
  }

  /** Drops everything (the session is ending); open responses are reported interrupted. */
  clear(): void {
    for (const r of this.#responses.values()) {
      if (!r.reported && (r.played > 0 || r.queued > 0)) this.#report(r, true);
    }
    this.#segments.length = 0;
    this.#responses.clear();
    this.#queued = 0;
    this.#emptied();
  }

  /**
   * True while the response at the head of the queue has not started playing, is still growing and has
   * fewer than `samples` queued: its start is held back (so lip sync can look ahead).
   */
  headHeld(samples: number): boolean {
    const s = this.#segments[0];
    if (!s) return false;
    const r = this.#responses.get(s.responseId);
    return !!r && r.played === 0 && !r.done && !r.interrupted && r.queued < samples;
  }

  /**
   * The samples {@link take} would give next that belong to the head response, contiguous: `n` samples
   * from its sample `from`; null when nothing is queued.
   */
  headRun(): { responseId: string; from: number; n: number } | null {
    const head = this.#segments[0];
    if (!head) return null;
    const from = head.at + head.offset;
    let n = 0;
    for (const s of this.#segments) {
      if (s.responseId !== head.responseId || s.at + s.offset !== from + n) break;
      n += s.n - s.offset;
    }
    return { responseId: head.responseId, from, n };
  }

  /**
   * Where the next sample of a response still speaking will come from (its samples pushed so far), or null
   * when its audio is complete (done, interrupted) or it is unknown: while a response is open, a queue run
   * dry means its next chunk is on its way.
   */
  expected(responseId: string): number | null {
    const r = this.#responses.get(responseId);
    return r && !r.done && !r.interrupted ? r.pushed : null;
  }

  /** The response whose samples {@link take} would give next, or null when nothing is queued. */
  headResponse(): string | null {
    return this.#segments[0]?.responseId ?? null;
  }

  /** Moves up to `n` samples into `out` at `at`; returns how many. `onSpan` says whose samples they are. */
  take(out: Int16Array, at: number, n: number, onSpan?: TakenSpan): number {
    let got = 0;
    while (got < n && this.#segments.length) {
      const s = this.#segments[0];
      const k = Math.min(n - got, s.n - s.offset);
      this.#copyOut(out, at + got, s.start + s.offset, k);
      onSpan?.(s.responseId, s.at + s.offset, at + got, k);
      s.offset += k;
      got += k;
      const r = this.#responses.get(s.responseId)!;
      r.queued -= k;
      r.played += k;
      if (s.offset === s.n) this.#segments.shift();
      this.#settle(r);
    }
    this.#queued -= got;
    this.#emptied();
    return got;
  }

  /** Copies up to `n` queued samples, starting `skip` samples from the head, without consuming them. */
  peek(out: Int16Array, at: number, skip: number, n: number): number {
    let got = 0;
    for (const s of this.#segments) {
      if (got >= n) break;
      let avail = s.n - s.offset;
      let start = s.offset;
      if (skip >= avail) {
        skip -= avail;
        continue;
      }
      start += skip;
      avail -= skip;
      skip = 0;
      const k = Math.min(n - got, avail);
      this.#copyOut(out, at + got, s.start + start, k);
      got += k;
    }
    return got;
  }

  #response(id: string): ResponseState {
    let r = this.#responses.get(id);
    if (!r) {
      r = { id, done: false, interrupted: false, queued: 0, played: 0, pushed: 0, reported: false };
      this.#responses.set(id, r);
    }
    return r;
  }

  #settle(r: ResponseState): void {
    if (r.done && !r.interrupted && r.queued === 0) this.#report(r, false);
  }

  #report(r: ResponseState, interrupted: boolean): void {
    if (!r.reported) {
      r.reported = true;
      this.options.onPlayed(r.id, Math.round(r.played * 1000 / this.options.sampleRate), interrupted);
    }
    if (r.queued === 0) {
      this.#responses.delete(r.id);
      this.#finished.add(r.id);
      if (this.#finished.size > 64) this.#finished.delete(this.#finished.values().next().value!);
    }
  }

  /** Drops up to `excess` of the oldest queued samples (the bound). */
  #dropOldest(excess: number): void {
    while (excess > 0 && this.#segments.length) {
      const s = this.#segments[0];
      const k = Math.min(excess, s.n - s.offset);
      s.offset += k;
      excess -= k;
      this.#queued -= k;
      this.overflowDropped += k;
      const r = this.#responses.get(s.responseId)!;
      r.queued -= k;
      if (s.offset === s.n) this.#segments.shift();
      this.#settle(r);
    }
  }

  /**
   * Room for `n` more samples after the last one queued: when the span from the head's next sample to the
   * write position (holes left by interrupted responses included) would outgrow the ring, the queued runs
   * are copied, contiguous, into a ring of twice the size (or more).
   */
  #reserve(n: number): void {
    const head = this.#segments[0];
    const from = head ? head.start + head.offset : this.#write;
    if (this.#write - from + n <= this.#ring.length) return;
    let size = this.#ring.length;
    while (size < this.#queued + n) size *= 2;
    const next = new Int16Array(size);
    let at = 0;
    for (const s of this.#segments) {
      const k = s.n - s.offset;
      this.#copyOut(next, at, s.start + s.offset, k);
      s.start = at;
      s.at += s.offset;
      s.n = k;
      s.offset = 0;
      at += k;
    }
    this.#ring = next;
    this.#mask = size - 1;
    this.#write = at;
  }

  /** Nothing queued: positions start over, and a ring grown beyond its first size is given back. */
  #emptied(): void {
    if (this.#segments.length) return;
    this.#write = 0;
    if (this.#ring.length > INITIAL_RING_SAMPLES) {
      this.#ring = new Int16Array(INITIAL_RING_SAMPLES);
      this.#mask = INITIAL_RING_SAMPLES - 1;
    }
  }

  /** Copies `k` samples of the ring from position `pos` into `out` at `outAt` (two pieces across the end). */
  #copyOut(out: Int16Array, outAt: number, pos: number, k: number): void {
    const ring = this.#ring, i = pos & this.#mask;
    const first = Math.min(k, ring.length - i);
    out.set(ring.subarray(i, i + first), outAt);
    if (first < k) out.set(ring.subarray(0, k - first), outAt + first);
  }

  /** Copies `samples` into the ring at position `pos`. */
  #copyIn(samples: Int16Array, pos: number): void {
    const ring = this.#ring, i = pos & this.#mask;
    const first = Math.min(samples.length, ring.length - i);
    ring.set(first === samples.length ? samples : samples.subarray(0, first), i);
    if (first < samples.length) ring.set(samples.subarray(first), 0);
  }
}
