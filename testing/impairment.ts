/**
 * What a bad network does to packets, decided one packet at a time from a seeded random stream, so a test
 * or a bench can replay the same losses: random loss, burst loss (a two-state Gilbert–Elliott channel),
 * delay with jitter, reordering, and a bandwidth cap with a bounded queue. The UDP and TCP impairment
 * proxies (`udp_proxy.ts`, `tcp_proxy.ts`) share it; it knows nothing of sockets and reads no clock of its
 * own (the caller passes `now`), so its decisions can be checked exactly.
 *
 * @module
 */
import { prng } from "../src/media/motion.ts";

/** How one direction of a path is impaired. Every field is optional; an empty object is a clean path. */
export interface Impairment {
  /** Probability that a packet is lost at random (0–1). */
  loss?: number;
  /**
   * Burst loss, Gilbert–Elliott: in the good state a packet moves to the bad state with `enter`, in the bad
   * state it leaves with `leave`; packets in the bad state are lost with `lossInBad` (default 1). The mean
   * burst is `1 / leave` packets.
   */
  burst?: { enter: number; leave: number; lossInBad?: number };
  /** Fixed one-way delay, ms. */
  delayMs?: number;
  /** Jitter: each packet's delay gets a uniform extra in `[-jitterMs, +jitterMs]` (never below 0 in total). */
  jitterMs?: number;
  /**
   * Whether jitter may reorder packets (a real path's queues mostly keep order: default false, each packet
   * leaves no earlier than the one before it).
   */
  reorderByJitter?: boolean;
  /** Probability that a packet is held back an extra `reorderMs` (so later ones overtake it). */
  reorder?: number;
  /** How long a reordered packet is held back, ms (default 30). */
  reorderMs?: number;
  /** Bandwidth cap, kbit/s (packets are serialized at this rate behind a FIFO). */
  rateKbps?: number;
  /** Longest queue behind the cap, ms of serialization; a packet that would wait longer is dropped (200). */
  queueMs?: number;
}

/** What happened to one packet. */
export type Verdict =
  | { kind: "send"; at: number }
  | { kind: "drop"; why: "loss" | "burst" | "queue" };

/** Counters of one direction. */
export interface ImpairmentStats {
  packets: number;
  bytes: number;
  sent: number;
  lost: number;
  burstLost: number;
  queueDropped: number;
  reordered: number;
}

/** A seeded uniform random stream in [0, 1) (mulberry32, the media plane's): the same seed gives the same losses. */
export const seededRandom: (seed: number) => () => number = prng;

/** The decisions of one direction of a path (one per direction: each keeps its own state). */
export class ImpairedLink {
  #spec: Impairment;
  readonly #random: () => number;
  #bad = false;
  /** When the cap's serializer is free again, ms. */
  #busyUntil = 0;
  /** The latest departure time given (keeps order when reordering is off). */
  #lastAt = 0;
  readonly stats: ImpairmentStats = {
    packets: 0,
    bytes: 0,
    sent: 0,
    lost: 0,
    burstLost: 0,
    queueDropped: 0,
    reordered: 0,
  };

  constructor(spec: Impairment, seed: number) {
    this.#spec = { ...spec };
    this.#random = seededRandom(seed);
  }

  /** The impairment now in force. */
  get spec(): Impairment {
    return { ...this.#spec };
  }

  /** Changes the impairment from the next packet on (a bench switches conditions mid-run). */
  set(spec: Impairment): void {
    this.#spec = { ...spec };
    this.#bad = false;
  }

  /** Decides the fate of a packet of `bytes` arriving at `now` (ms): dropped, or sent at `at`. */
  decide(now: number, bytes: number): Verdict {
    const s = this.#spec;
    const st = this.stats;
    st.packets++;
    st.bytes += bytes;
    // Every draw is taken whatever the spec, so one spec's decisions do not shift another's stream.
    const rLoss = this.#random();
    const rState = this.#random();
    const rBad = this.#random();
    const rJitter = this.#random();
    const rReorder = this.#random();
    if (s.burst) {
      this.#bad = this.#bad ? rState >= s.burst.leave : rState < s.burst.enter;
      if (this.#bad && rBad < (s.burst.lossInBad ?? 1)) {
        st.burstLost++;
        return { kind: "drop", why: "burst" };
      }
    }
    if (s.loss && rLoss < s.loss) {
      st.lost++;
      return { kind: "drop", why: "loss" };
    }
    let at = now;
    if (s.rateKbps && s.rateKbps > 0) {
      const serialize = (bytes * 8) / s.rateKbps; // ms
      const start = Math.max(now, this.#busyUntil);
      if (start - now > (s.queueMs ?? 200)) {
        st.queueDropped++;
        return { kind: "drop", why: "queue" };
      }
      this.#busyUntil = start + serialize;
      at = this.#busyUntil;
    }
    const jitter = s.jitterMs ? (rJitter * 2 - 1) * s.jitterMs : 0;
    at += Math.max(0, (s.delayMs ?? 0) + jitter);
    if (!s.reorderByJitter) at = Math.max(at, this.#lastAt);
    if (s.reorder && rReorder < s.reorder) {
      st.reordered++;
      at += s.reorderMs ?? 30;
    } else {
      this.#lastAt = Math.max(this.#lastAt, at);
    }
    st.sent++;
    return { kind: "send", at };
  }
}

/**
 * A departure scheduler: runs each callback at its time, in time order, with one timer at a time (a busy
 * machine fires late; then everything overdue goes at once, in order).
 */
export class DepartureQueue {
  #items: { at: number; seq: number; run: () => void }[] = [];
  #seq = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  readonly #now: () => number;

  constructor(now: () => number = () => performance.now()) {
    this.#now = now;
  }

  /** Runs `run` at `at` (ms, on the queue's clock). */
  add(at: number, run: () => void): void {
    if (this.#closed) return;
    const item = { at, seq: this.#seq++, run };
    // Insert in order (the queue is short and mostly appended to).
    let i = this.#items.length;
    while (i > 0 && (this.#items[i - 1].at > at)) i--;
    this.#items.splice(i, 0, item);
    this.#arm();
  }

  /** Items waiting. */
  get size(): number {
    return this.#items.length;
  }

  #arm(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#closed || !this.#items.length) return;
    const wait = Math.max(0, this.#items[0].at - this.#now());
    this.#timer = setTimeout(this.#fire, wait);
  }

  #fire = (): void => {
    this.#timer = undefined;
    const now = this.#now();
    while (this.#items.length && this.#items[0].at <= now + 0.5) {
      const item = this.#items.shift()!;
      try {
        item.run();
      } catch { /* a closing socket */ }
    }
    this.#arm();
  };

  /** Drops what waits and stops the timer. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#items = [];
  }
}
