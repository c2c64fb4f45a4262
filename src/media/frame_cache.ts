/**
 * A byte-bounded LRU cache of composited frames, shared by every session of the process: the avatar has
 * few distinct looks (head offset × eyes × mouth per avatar and background), so after warm-up a frame
 * costs a lookup instead of compositing and colour conversion.
 *
 * @module
 */

/** LRU cache of frames keyed by string, bounded by total bytes. */
export class FrameCache {
  readonly #map = new Map<string, Uint8Array>();
  #bytes = 0;
  hits = 0;
  misses = 0;

  constructor(readonly maxBytes: number) {}

  /** Bytes held. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Entries held. */
  get size(): number {
    return this.#map.size;
  }

  /** The cached frame for `key`, or the one `make` builds (then cached). */
  get(key: string, make: () => Uint8Array): Uint8Array {
    const hit = this.#map.get(key);
    if (hit) {
      this.hits++;
      this.#map.delete(key);
      this.#map.set(key, hit);
      return hit;
    }
    this.misses++;
    const frame = make();
    if (frame.length <= this.maxBytes) {
      this.#map.set(key, frame);
      this.#bytes += frame.length;
      while (this.#bytes > this.maxBytes) {
        const [oldKey, old] = this.#map.entries().next().value!;
        this.#map.delete(oldKey);
        this.#bytes -= old.length;
      }
    }
    return frame;
  }
}
