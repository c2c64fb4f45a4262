/**
 * SHA-256 and HMAC-SHA256 for the request path (the API-key hash of every authenticated request, the two
 * signatures of a client token), leaving nothing behind that only a full garbage collection can free.
 *
 * Why not node:crypto: in Deno 2.9 every `createHash`/`createHmac` (and `hash()`, which calls it) is backed
 * by a native object that only a major (mark-compact) collection frees. At ~35k authenticated requests/s
 * they grew V8's "global" heap by ~2.5 MB/s, so an incremental mark-compact started every ~15 s; with the
 * service pinned to one core its concurrent marking took the event loop away for 10-20 ms at a time, and
 * the p99 of `GET /v1/sessions/{id}` went over 5 ms in about a third of the bench's 5-second runs
 * (`--trace-incremental-marking` showed `global: 51MB` against `v8: 17MB` when it started). WebCrypto is
 * asynchronous (a thread hop per call, several µs).
 *
 * What this uses instead: @noble/hashes (audited, pure JS), with one instance per key kept pristine and a
 * working instance reset from it by `_cloneInto` (part of noble's documented `Hash` interface: "copies the
 * current hash state into an existing or new instance") before each message. Input text is encoded into a
 * reused buffer; the only allocation of a call is its output string. Measured in a loop (`taskset -c 0`):
 * an API-key hash 0.6 µs, against 0.8 µs for node:crypto and 1.7 µs for noble's one-shot `sha256()`.
 *
 * The functions are synchronous and share module state, which is safe on one JS thread. After each message
 * the reused buffers are zeroed, so a presented API key is not kept in memory past its hash.
 *
 * @module
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { hmac } from "@noble/hashes/hmac.js";

const encoder = new TextEncoder();
/** Reused encoding buffer: texts that fit (keys, token payloads) are encoded without an allocation. */
const scratch = new Uint8Array(2048);

/** Bytes of the scratch buffer written by the last {@link utf8} call (wiped by {@link wipeScratch}). */
let scratchUsed = 0;

/** UTF-8 bytes of `text`: a view of the reused buffer when it fits (valid until {@link wipeScratch}). */
function utf8(text: string): Uint8Array {
  const { read, written } = encoder.encodeInto(text, scratch);
  scratchUsed = written;
  return read === text.length ? scratch.subarray(0, written) : encoder.encode(text);
}

/**
 * Zeroes what the last message left in reused memory: an API key's plaintext must not outlive its request
 * in a module-level buffer (the hash instance's block buffer holds it too; `destroy()` wipes that, and
 * the next `_cloneInto` makes the instance usable again).
 */
function wipeScratch(): void {
  scratch.fill(0, 0, scratchUsed);
  scratchUsed = 0;
}

const pristine = sha256.create();
const working = sha256.create();
const digest = new Uint8Array(32);

/** Lowercase hex SHA-256 of the UTF-8 encoding of `text`. */
export function sha256Hex(text: string): string {
  pristine._cloneInto(working);
  working.update(utf8(text));
  working.digestInto(digest);
  working.destroy();
  wipeScratch();
  return digest.toHex();
}

/**
 * Non-zero bytes left in the reused memory after the last message (the scratch buffer and the block buffer
 * of the SHA-256 working instance, a protected field of noble's): 0 when the wiping works. For tests.
 */
export function residueForTests(): number {
  const block = (working as unknown as { buffer: Uint8Array }).buffer;
  return scratch.reduce((n, b) => n + (b ? 1 : 0), 0) + block.reduce((n, b) => n + (b ? 1 : 0), 0);
}

type Mac = ReturnType<typeof hmac.create>;

/** HMAC-SHA256 under one key, for many messages. */
export class HmacSha256 {
  readonly #pristine: Mac;
  readonly #working: Mac;
  readonly #mac = new Uint8Array(32);

  /** @param key the key: its UTF-8 bytes when a string */
  constructor(key: string | Uint8Array) {
    this.#pristine = hmac.create(sha256, typeof key === "string" ? encoder.encode(key) : key);
    // clone() is typed without noble's return brand; the object is an HMAC instance like the pristine one
    this.#working = this.#pristine.clone() as Mac;
  }

  /** The MAC of the UTF-8 encoding of `text`, base64url without padding (as in a JWS signature). */
  base64url(text: string): string {
    this.#pristine._cloneInto(this.#working);
    this.#working.update(utf8(text));
    this.#working.digestInto(this.#mac); // HMAC's digestInto destroys (wipes) its inner hashes itself
    wipeScratch();
    return this.#mac.toBase64({ alphabet: "base64url", omitPadding: true });
  }
}
