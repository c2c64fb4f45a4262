/**
 * The agent's responses as the media plane sees them, for vendor engines that have no response ids of their
 * own or signal barge-in without naming what it cuts: the bridge opens a response when the agent starts
 * speaking, closes it when its turn ends, and on barge-in interrupts every response the media plane may
 * still be playing (vendors send audio ahead of playout, so a finished response can still be on air), and
 * only those: a barge-in while nothing plays causes no flush.
 *
 * @module
 */
import type { ProviderEvents } from "./types.ts";

/** Responses remembered as possibly still playing (older ones are long played). */
const MAX_UNPLAYED = 16;

/** Tracks one session's agent responses. */
export class AgentTurns {
  #open: string | null = null;
  readonly #unplayed: string[] = [];
  #count = 0;

  constructor(
    readonly events: Pick<ProviderEvents, "onResponseStarted" | "onResponseDone" | "onInterrupt">,
  ) {}

  /** The response the agent is speaking now, if any. */
  get open(): string | null {
    return this.#open;
  }

  /** Opens a response (with the vendor's id, or a fresh one); an open one is closed as completed first. */
  start(id: string = this.#fresh()): string {
    if (this.#open === id) return id;
    if (this.#open !== null) this.done("completed");
    this.#open = id;
    this.#unplayed.push(id);
    if (this.#unplayed.length > MAX_UNPLAYED) this.#unplayed.shift();
    this.events.onResponseStarted(id);
    return id;
  }

  /** The open response, opened now when there is none. */
  current(): string {
    return this.#open ?? this.start();
  }

  /** The agent finished the open response (it may still be playing). */
  done(status: string): void {
    const id = this.#open;
    if (id === null) return;
    this.#open = null;
    this.events.onResponseDone(id, status);
  }

  /** Barge-in: flushes every response still playing and closes the open one. Returns how many. */
  interrupt(): number {
    const ids = this.#unplayed.splice(0);
    for (const id of ids) this.events.onInterrupt(id);
    this.done("interrupted");
    return ids.length;
  }

  /** The media plane reported a response played (or cut): it is no longer on air. */
  played(id: string): void {
    const i = this.#unplayed.indexOf(id);
    if (i >= 0) this.#unplayed.splice(i, 1);
  }

  #fresh(): string {
    return `r_${++this.#count}`;
  }
}
