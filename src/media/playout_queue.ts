/**
 * The avatar's speech waiting to be played: the engine's responses, already at the encoder's rate, in
 * order. The media clock takes samples from it as they are played; barge-in drops a response's queued
 * samples at once. Each response is reported played (or interrupted) to the engine exactly once.
 *
 * @module
 */

/** A response's playout outcome, for `response.played`. */
export type PlayedReport = (responseId: string, playedMs: number, interrupted: boolean) => void;

interface Segment {
  responseId: string;
  samples: Int16Array;
  offset: number;
  /** Position of `samples[0]` in its response's audio. */
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

/** Speech queued for playout, bounded in length (the oldest audio is dropped beyond the bound). */
export class PlayoutQueue {
  readonly #segments: Segment[] = [];
  readonly #responses = new Map<string, ResponseState>();
  /** Ids of responses already reported (late audio for them is ignored); the last 64 are kept. */
  readonly #finished = new Set<string>();
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

  /** True when no queued response can still grow (every queued sample is final). */
  get settled(): boolean {
    for (const r of this.#responses.values()) if (!r.done && !r.interrupted) return false;
    return true;
  }

  /** A response begins. */
  start(responseId: string): void {
    if (!this.#finished.has(responseId)) this.#response(responseId);
  }

  /** Appends audio of a response (ignored after its interruption). */
  push(responseId: string, samples: Int16Array): void {
    if (this.#finished.has(responseId)) return;
    const r = this.#response(responseId);
    if (r.interrupted || r.done || samples.length === 0) return;
    this.#segments.push({ responseId, samples, offset: 0, at: r.pushed });
    r.pushed += samples.length;
    r.queued += samples.length;
    this.#queued += samples.length;
    this.#bound();
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
      dropped += s.samples.length - s.offset;
      this.#segments.splice(i, 1);
    }
    this.#queued -= dropped;
    this.interruptDropped += dropped;
    r.queued = 0;
    r.interrupted = true;
    this.#report(r, true);
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
      n += s.samples.length - s.offset;
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
      const k = Math.min(n - got, s.samples.length - s.offset);
      out.set(s.samples.subarray(s.offset, s.offset + k), at + got);
      onSpan?.(s.responseId, s.at + s.offset, at + got, k);
      s.offset += k;
      got += k;
      const r = this.#responses.get(s.responseId)!;
      r.queued -= k;
      r.played += k;
      if (s.offset === s.samples.length) this.#segments.shift();
      this.#settle(r);
    }
    this.#queued -= got;
    return got;
  }

  /** Copies up to `n` queued samples, starting `skip` samples from the head, without consuming them. */
  peek(out: Int16Array, at: number, skip: number, n: number): number {
    let got = 0;
    for (const s of this.#segments) {
      if (got >= n) break;
      let avail = s.samples.length - s.offset;
      let start = s.offset;
      if (skip >= avail) {
        skip -= avail;
        continue;
      }
      start += skip;
      avail -= skip;
      skip = 0;
      const k = Math.min(n - got, avail);
      out.set(s.samples.subarray(start, start + k), at + got);
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

  #bound(): void {
    let excess = this.#queued - this.options.maxSamples;
    while (excess > 0 && this.#segments.length) {
      const s = this.#segments[0];
      const k = Math.min(excess, s.samples.length - s.offset);
      s.offset += k;
      excess -= k;
      this.#queued -= k;
      this.overflowDropped += k;
      const r = this.#responses.get(s.responseId)!;
      r.queued -= k;
      if (s.offset === s.samples.length) this.#segments.shift();
      this.#settle(r);
    }
  }
}
