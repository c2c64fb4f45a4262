/**
 * Byte-level text handling for credentials, which never become JavaScript strings: an owned, growable
 * buffer that zeroes every storage it leaves behind, UTF-8 and JSON string decoding with the exact
 * semantics of `TextDecoder` + `JSON.parse` (so lengths and character classes match what the schema would
 * see of the decoded string), and the encodings a credential is sent in (header bytes, form and URL
 * percent-encoding).
 *
 * @module
 */

/** A growable byte buffer that owns its storage and zeroes every storage it leaves behind. */
export class ByteBuffer {
  #buf: Uint8Array<ArrayBuffer>;
  #len = 0;

  constructor(capacity = 256) {
    this.#buf = new Uint8Array(capacity);
  }

  /** Bytes written so far. */
  get length(): number {
    return this.#len;
  }

  #grow(need: number): void {
    if (this.#len + need <= this.#buf.length) return;
    let cap = this.#buf.length * 2;
    while (cap < this.#len + need) cap *= 2;
    const next = new Uint8Array(cap);
    next.set(this.#buf.subarray(0, this.#len));
    this.#buf.fill(0);
    this.#buf = next;
  }

  /** Appends one byte. */
  byte(b: number): void {
    this.#grow(1);
    this.#buf[this.#len++] = b;
  }

  /** Appends bytes. */
  bytes(b: Uint8Array): void {
    this.#grow(b.length);
    this.#buf.set(b, this.#len);
    this.#len += b.length;
  }

  /** Appends an ASCII string (non-secret text: header names, fixed parts). */
  ascii(s: string): void {
    this.#grow(s.length);
    for (let i = 0; i < s.length; i++) this.#buf[this.#len++] = s.charCodeAt(i) & 0xff;
  }

  /** Appends a code point as UTF-8 (a lone surrogate as U+FFFD, as a USVString conversion does). */
  codePoint(cp: number): void {
    if (cp >= 0xd800 && cp <= 0xdfff) cp = 0xfffd;
    if (cp < 0x80) this.byte(cp);
    else if (cp < 0x800) {
      this.byte(0xc0 | (cp >> 6));
      this.byte(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      this.byte(0xe0 | (cp >> 12));
      this.byte(0x80 | ((cp >> 6) & 0x3f));
      this.byte(0x80 | (cp & 0x3f));
    } else {
      this.byte(0xf0 | (cp >> 18));
      this.byte(0x80 | ((cp >> 12) & 0x3f));
      this.byte(0x80 | ((cp >> 6) & 0x3f));
      this.byte(0x80 | (cp & 0x3f));
    }
  }

  /** A view of the bytes written (valid until the next write or {@link zero}). */
  view(): Uint8Array<ArrayBuffer> {
    return this.#buf.subarray(0, this.#len);
  }

  /** The bytes written, moved into a buffer of their exact size (this buffer is zeroed and emptied). */
  take(): Uint8Array<ArrayBuffer> {
    const out = this.#buf.slice(0, this.#len);
    this.zero();
    return out;
  }

  /** Zeroes the storage and empties the buffer. */
  zero(): void {
    this.#buf.fill(0);
    this.#len = 0;
  }
}

/**
 * Decodes UTF-8 `bytes[start, end)` as `TextDecoder` does (WHATWG: each maximal ill-formed subpart
 * becomes one U+FFFD), calling `emit` with every code point.
 */
export function decodeUtf8(
  bytes: Uint8Array,
  start: number,
  end: number,
  emit: (cp: number) => void,
): void {
  let needed = 0, seen = 0, cp = 0, lower = 0x80, upper = 0xbf;
  for (let i = start; i < end; i++) {
    const b = bytes[i];
    if (needed === 0) {
      if (b <= 0x7f) emit(b);
      else if (b >= 0xc2 && b <= 0xdf) {
        needed = 1;
        cp = b & 0x1f;
      } else if (b >= 0xe0 && b <= 0xef) {
        if (b === 0xe0) lower = 0xa0;
        if (b === 0xed) upper = 0x9f;
        needed = 2;
        cp = b & 0x0f;
      } else if (b >= 0xf0 && b <= 0xf4) {
        if (b === 0xf0) lower = 0x90;
        if (b === 0xf4) upper = 0x8f;
        needed = 3;
        cp = b & 0x07;
      } else emit(0xfffd);
      continue;
    }
    if (b < lower || b > upper) {
      needed = seen = cp = 0;
      lower = 0x80;
      upper = 0xbf;
      emit(0xfffd);
      i--; // the byte starts over
      continue;
    }
    lower = 0x80;
    upper = 0xbf;
    cp = (cp << 6) | (b & 0x3f);
    if (++seen === needed) {
      emit(cp);
      needed = seen = cp = 0;
    }
  }
  if (needed !== 0) emit(0xfffd);
}

function hexValue(b: number): number {
  if (b >= 0x30 && b <= 0x39) return b - 0x30;
  if (b >= 0x41 && b <= 0x46) return b - 0x37;
  if (b >= 0x61 && b <= 0x66) return b - 0x57;
  return -1;
}

/**
 * Decodes the content of a valid JSON string token (`bytes[start, end)`, between its quotes) as
 * `JSON.parse` of the decoded text would, calling `emit` with every code point — a lone surrogate (from a
 * `\u` escape) as itself. Returns the string's length in UTF-16 code units.
 */
export function decodeJsonString(
  bytes: Uint8Array,
  start: number,
  end: number,
  emit: (cp: number) => void,
): number {
  let units = 0;
  let pendingHigh = -1;
  const flushHigh = () => {
    if (pendingHigh >= 0) {
      emit(pendingHigh);
      pendingHigh = -1;
    }
  };
  const raw = (cp: number) => {
    flushHigh();
    units += cp > 0xffff ? 2 : 1;
    emit(cp);
  };
  let i = start;
  while (i < end) {
    // A run of raw bytes up to the next escape.
    let j = i;
    while (j < end && bytes[j] !== 0x5c) j++;
    if (j > i) decodeUtf8(bytes, i, j, raw);
    if (j >= end) break;
    const e = bytes[j + 1];
    if (e === 0x75) {
      const unit = (hexValue(bytes[j + 2]) << 12) | (hexValue(bytes[j + 3]) << 8) |
        (hexValue(bytes[j + 4]) << 4) | hexValue(bytes[j + 5]);
      units += 1;
      if (unit >= 0xdc00 && unit <= 0xdfff && pendingHigh >= 0) {
        emit(0x10000 + ((pendingHigh - 0xd800) << 10) + (unit - 0xdc00));
        pendingHigh = -1;
      } else {
        flushHigh();
        if (unit >= 0xd800 && unit <= 0xdbff) pendingHigh = unit;
        else emit(unit);
      }
      i = j + 6;
      continue;
    }
    // \b \f \n \r \t, or the character itself (\" \\ \/)
    raw(
      e === 0x62 ? 0x08 : e === 0x66 ? 0x0c : e === 0x6e ? 0x0a : e === 0x72 ? 0x0d : e === 0x74 ? 0x09 : e,
    );
    i = j + 2;
  }
  flushHigh();
  return units;
}

/**
 * Code points the URL fields refuse (`/[\s\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u` of `src/text_fields.ts`), as
 * ranges; tests/providers/credential_bytes_test.ts checks the table against the expression for every code
 * point, so a new Unicode version in the runtime cannot make them differ silently.
 */
export const URL_FORBIDDEN_RANGES: readonly (readonly [number, number])[] = [
  [0x0, 0x20],
  [0x7f, 0xa0],
  [0xad, 0xad],
  [0x600, 0x605],
  [0x61c, 0x61c],
  [0x6dd, 0x6dd],
  [0x70f, 0x70f],
  [0x890, 0x891],
  [0x8e2, 0x8e2],
  [0x1680, 0x1680],
  [0x180e, 0x180e],
  [0x2000, 0x200f],
  [0x2028, 0x202f],
  [0x205f, 0x2064],
  [0x2066, 0x206f],
  [0x3000, 0x3000],
  [0xd800, 0xdfff],
  [0xfeff, 0xfeff],
  [0xfff9, 0xfffb],
  [0x110bd, 0x110bd],
  [0x110cd, 0x110cd],
  [0x13430, 0x1343f],
  [0x1bca0, 0x1bca3],
  [0x1d173, 0x1d17a],
  [0xe0001, 0xe0001],
  [0xe0020, 0xe007f],
];

/** Whether a URL field refuses the code point `cp`. */
export function urlForbidden(cp: number): boolean {
  for (const [a, b] of URL_FORBIDDEN_RANGES) {
    if (cp < a) return false;
    if (cp <= b) return true;
  }
  return false;
}

/**
 * Header value bytes of UTF-8 `value`, as HTTP clients send a JavaScript header string: each code point
 * one byte (Latin-1). Null when a code point cannot be sent (above U+00FF, or a control other than tab:
 * the clients refuse those).
 */
export function latin1Bytes(value: Uint8Array, into: ByteBuffer): boolean {
  let ok = true;
  decodeUtf8(value, 0, value.length, (cp) => {
    if (cp > 0xff || (cp < 0x20 && cp !== 0x09) || cp === 0x7f) ok = false;
    else if (ok) into.byte(cp);
  });
  return ok;
}

const HEX = "0123456789ABCDEF";

function percent(into: ByteBuffer, b: number): void {
  into.byte(0x25);
  into.byte(HEX.charCodeAt(b >> 4));
  into.byte(HEX.charCodeAt(b & 15));
}

/**
 * `application/x-www-form-urlencoded` serialization of UTF-8 `value` (what `URLSearchParams` writes):
 * ASCII alphanumerics and `*-._` as they are, space as `+`, every other byte as `%XX`.
 */
export function formEncode(value: Uint8Array, into: ByteBuffer): void {
  for (const b of value) {
    const alnum = (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a);
    if (alnum || b === 0x2a || b === 0x2d || b === 0x2e || b === 0x5f) into.byte(b);
    else if (b === 0x20) into.byte(0x2b);
    else percent(into, b);
  }
}

/** Bytes a URL path or query keeps as they are (WHATWG percent-encode sets of a special URL). */
function keeps(b: number, set: "path" | "query"): boolean {
  if (b <= 0x20 || b > 0x7e) return false;
  if (b === 0x22 || b === 0x23 || b === 0x3c || b === 0x3e) return false;
  if (set === "path") return b !== 0x3f && b !== 0x60 && b !== 0x7b && b !== 0x7d;
  return b !== 0x27;
}

/** Percent-encodes UTF-8 `bytes[start, end)` with the path or query percent-encode set. */
export function urlEncode(
  bytes: Uint8Array,
  start: number,
  end: number,
  set: "path" | "query",
  into: ByteBuffer,
): void {
  for (let i = start; i < end; i++) {
    const b = bytes[i];
    if (keeps(b, set)) into.byte(b);
    else percent(into, b);
  }
}

/**
 * Decodes `application/x-www-form-urlencoded` bytes `[start, end)` (`+` as space, `%XX` as its byte) into
 * `into` (the bytes; `URLSearchParams` would decode them as UTF-8 after).
 */
export function formDecode(bytes: Uint8Array, start: number, end: number, into: ByteBuffer): void {
  for (let i = start; i < end; i++) {
    const b = bytes[i];
    if (b === 0x2b) into.byte(0x20);
    else if (b === 0x25 && i + 2 < end && hexValue(bytes[i + 1]) >= 0 && hexValue(bytes[i + 2]) >= 0) {
      into.byte((hexValue(bytes[i + 1]) << 4) | hexValue(bytes[i + 2]));
      i += 2;
    } else into.byte(b);
  }
}

/** Whether `bytes[start, end)` equals the ASCII text `text`. */
export function bytesEqual(bytes: Uint8Array, start: number, end: number, text: string): boolean {
  if (end - start !== text.length) return false;
  for (let i = 0; i < text.length; i++) if (bytes[start + i] !== text.charCodeAt(i)) return false;
  return true;
}

/** Whether `bytes` starts with the ASCII text `text`. */
export function startsWith(bytes: Uint8Array, text: string): boolean {
  return bytes.length >= text.length && bytesEqual(bytes, 0, text.length, text);
}
