/**
 * What the composition root undoes, last opened first: each builder that opens something (a KV handle, an
 * HTTP client, the embedded engine, the HTTP server) registers its closing here, and a failed start or a
 * stop runs them all, each step's failure ignored so that the next still runs.
 *
 * @module
 */

/** A stack of closing steps. */
export class Cleanup {
  readonly #steps: (() => unknown)[] = [];

  /** Registers a step (run before every step registered earlier). */
  push(step: () => unknown): void {
    this.#steps.push(step);
  }

  /** Runs every step, last registered first, once; a step's failure does not stop the others. */
  async run(): Promise<void> {
    while (this.#steps.length) await Promise.resolve(this.#steps.pop()!()).catch(() => {});
  }
}
