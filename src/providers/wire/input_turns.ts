/**
 * The event-loop fairness gate of engine input: every engine connection of a process reads its messages
 * through one {@link InputTurns}, which makes a long run of input wait for the timers already due. It is
 * one per process by construction, not by a module singleton: the worker side's composition
 * (`app/worker_side.ts`) creates it and hands it to the bridges (`BridgeDeps.inputTurns`), which give it to
 * every socket they open.
 *
 * @module
 */

/**
 * Engine input yields to the process's timers when it has kept the event loop busy. An engine that sends
 * a burst (a vendor's audio ahead of real time; engines catching up after a stall), and above all a
 * hundred sessions' engines whose reads complete in the same turn of the event loop, are processed as one
 * unbroken run of continuations (each message feeds the lip sync and the playout): measured at up to 250
 * ms, during which every session's media clock (its silence, its animation, its frames) waited. After
 * {@link InputTurns.budgetMs} of input processed without a gap, the next message waits for one shared
 * `setTimeout(0)`: the timers already due run first. Input that arrives now and then never waits.
 */
export class InputTurns {
  #busySince = 0;
  #last = -Infinity;
  #gate: Promise<void> | null = null;
  /** Times the input yielded (a counter). */
  yields = 0;

  constructor(
    readonly budgetMs = 4,
    /** Input this far apart (ms) is not one run: the event loop was free in between. */
    readonly gapMs = 1,
    readonly now: () => number = () => performance.now(),
  ) {}

  /** Called before each message is handled: a promise to wait for first, or null to go on. */
  next(): Promise<void> | null {
    if (this.#gate) return this.#gate;
    const now = this.now();
    if (now - this.#last > this.gapMs) this.#busySince = now;
    this.#last = now;
    if (now - this.#busySince < this.budgetMs) return null;
    this.yields++;
    this.#gate = new Promise((resolve) =>
      setTimeout(() => {
        this.#gate = null;
        this.#busySince = this.#last = this.now();
        resolve();
      }, 0)
    );
    return this.#gate;
  }
}
