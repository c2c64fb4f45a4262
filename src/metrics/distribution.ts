/**
 * A distribution of measured values (latencies, offsets) with bounded memory: values are counted in
 * 1 ms buckets, so percentiles are exact to the millisecond whatever the number of samples.
 *
 * @module
 */
import type { FigureSummary } from "../vocabulary/schemas.ts";

/** Values in 1 ms buckets within `[min, max]` (values outside are clamped). */
export class Distribution {
  readonly #buckets = new Map<number, number>();
  #count = 0;

  constructor(readonly min: number, readonly max: number) {}

  /** Number of values added. */
  get count(): number {
    return this.#count;
  }

  /** Adds a value (ignored unless finite). */
  add(value: number): void {
    if (!Number.isFinite(value)) return;
    const b = Math.round(Math.min(this.max, Math.max(this.min, value)));
    this.#buckets.set(b, (this.#buckets.get(b) ?? 0) + 1);
    this.#count++;
  }

  /** The nearest-rank percentile `p` (0–100), or null when empty. */
  percentile(p: number): number | null {
    if (this.#count === 0) return null;
    const rank = Math.max(1, Math.ceil((p / 100) * this.#count));
    let seen = 0;
    for (const k of [...this.#buckets.keys()].sort((a, b) => a - b)) {
      seen += this.#buckets.get(k)!;
      if (seen >= rank) return k;
    }
    return this.max;
  }

  /** Count, median and 95th percentile. */
  summary(): FigureSummary {
    return { count: this.#count, p50: this.percentile(50), p95: this.percentile(95) };
  }
}
