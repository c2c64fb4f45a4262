/**
 * The last half second of a session's written audio, kept for the renderer: a frame's audio is read when
 * the frame is rendered, at most a few frames after its time. Timeline sample `s` lies at
 * `(s − offset) % length`, so every block written on the audio grid lies whole in it (blocks are written in
 * place: no allocation per block).
 *
 * @module
 */

/** A ring of timeline audio (PCM16, 48 kHz). */
export class AudioRing {
  readonly #ring: Int16Array;
  readonly #offset: number;

  /** @param offset where the audio grid's blocks start on the timeline (samples) */
  constructor(length: number, offset: number) {
    this.#ring = new Int16Array(length);
    this.#offset = offset;
  }

  /** How many blocks of `size` samples the ring holds. */
  blocks(size: number): number {
    return this.#ring.length / size;
  }

  /** The ring's storage of the block of `size` samples starting at timeline sample `s` (on the grid). */
  block(s: number, size: number): Int16Array {
    const pos = this.#index(s);
    return this.#ring.subarray(pos, pos + size);
  }

  /** Copies the timeline's samples at [start, start + out.length) written before `written` into `out`. */
  read(out: Int16Array, start: number, written: number): void {
    const ringLen = this.#ring.length;
    const n = out.length;
    let p = Math.max(start, written - ringLen);
    while (p < start + n && p < written) {
      const at = this.#index(p);
      const k = Math.min(start + n, written, p + (ringLen - at)) - p;
      out.set(this.#ring.subarray(at, at + k), p - start);
      p += k;
    }
  }

  /** Where timeline sample `s` is in the ring (blocks, which start on the audio grid, never wrap). */
  #index(s: number): number {
    const len = this.#ring.length;
    return ((s - this.#offset) % len + len) % len;
  }
}
