/**
 * A growable byte buffer for incremental parsers (stream demuxers read from child pipes): append chunks,
 * look at the unread bytes, consume what was parsed.
 *
 * @module
 */

/** Accumulates chunks and hands out the unread bytes without copying more than needed. */
export class ByteQueue {
  #buf = new Uint8Array(0);
  #start = 0;
  #end = 0;

  /** Number of unread bytes. */
  get length(): number {
    return this.#end - this.#start;
  }

  /** Appends a chunk (copied). */
  push(chunk: Uint8Array): void {
    if (this.#end + chunk.length > this.#buf.length) {
      const unread = this.#end - this.#start;
      if (unread + chunk.length <= this.#buf.length) {
        this.#buf.copyWithin(0, this.#start, this.#end);
      } else {
        const next = new Uint8Array(Math.max(unread + chunk.length, this.#buf.length * 2, 4096));
        next.set(this.#buf.subarray(this.#start, this.#end));
        this.#buf = next;
      }
      this.#start = 0;
      this.#end = unread;
    }
    this.#buf.set(chunk, this.#end);
    this.#end += chunk.length;
  }

  /** A view of the unread bytes (valid until the next `push`). */
  view(): Uint8Array {
    return this.#buf.subarray(this.#start, this.#end);
  }

  /** Marks `n` bytes as read. */
  consume(n: number): void {
    this.#start = Math.min(this.#end, this.#start + n);
    if (this.#start === this.#end) this.#start = this.#end = 0;
  }
}
