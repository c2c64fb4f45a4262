/**
 * JSON read on its bytes, for credentials that arrive in JSON (a create body's credential fields, a minted
 * signed URL in a vendor's answer): validity exactly as `JSON.parse` judges it (iterative: no nesting limit
 * of its own), the members of an object without decoding their values, and one string member's value
 * decoded into a buffer of its own — so no credential becomes a JavaScript string. Keys are decoded: they
 * are names, not credentials.
 *
 * @module
 */
import { ByteBuffer, decodeJsonString } from "./credential_bytes.ts";

/** Bytes of the JSON syntax. */
export const QUOTE = 0x22, BACKSLASH = 0x5c, LBRACE = 0x7b, RBRACE = 0x7d, LBRACKET = 0x5b, RBRACKET = 0x5d;
export const COLON = 0x3a, COMMA = 0x2c;

function isWs(b: number): boolean {
  return b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d;
}

export function ws(b: Uint8Array, i: number): number {
  while (i < b.length && isWs(b[i])) i++;
  return i;
}

function isHex(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
}

/** End (exclusive) of the valid string token at `i`, or -1. */
export function stringEnd(b: Uint8Array, i: number): number {
  if (b[i] !== QUOTE) return -1;
  for (let j = i + 1; j < b.length;) {
    const c = b[j];
    if (c === QUOTE) return j + 1;
    if (c < 0x20) return -1;
    if (c !== BACKSLASH) {
      j++;
      continue;
    }
    const e = b[j + 1];
    if (e === 0x75) {
      if (!(isHex(b[j + 2]) && isHex(b[j + 3]) && isHex(b[j + 4]) && isHex(b[j + 5]))) return -1;
      j += 6;
    } else if (
      e === QUOTE || e === BACKSLASH || e === 0x2f || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 ||
      e === 0x74
    ) j += 2;
    else return -1;
  }
  return -1;
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

/** End of the valid number token at `i`, or -1. */
function numberEnd(b: Uint8Array, i: number): number {
  if (b[i] === 0x2d) i++;
  if (b[i] === 0x30) i++;
  else if (b[i] >= 0x31 && b[i] <= 0x39) { while (isDigit(b[i])) i++; }
  else return -1;
  if (b[i] === 0x2e) {
    i++;
    if (!isDigit(b[i])) return -1;
    while (isDigit(b[i])) i++;
  }
  if (b[i] === 0x65 || b[i] === 0x45) {
    i++;
    if (b[i] === 0x2b || b[i] === 0x2d) i++;
    if (!isDigit(b[i])) return -1;
    while (isDigit(b[i])) i++;
  }
  return i;
}

function literalEnd(b: Uint8Array, i: number, word: string): number {
  for (let k = 0; k < word.length; k++) if (b[i + k] !== word.charCodeAt(k)) return -1;
  return i + word.length;
}

/** End of the scalar token at `i` (string, number, literal), or -1. */
function scalarEnd(b: Uint8Array, i: number): number {
  const c = b[i];
  if (c === QUOTE) return stringEnd(b, i);
  if (c === 0x74) return literalEnd(b, i, "true");
  if (c === 0x66) return literalEnd(b, i, "false");
  if (c === 0x6e) return literalEnd(b, i, "null");
  return numberEnd(b, i);
}

/**
 * Whether `b[from, to)` is one JSON text as `JSON.parse` accepts it (iterative: no nesting depth limit of
 * its own, as `JSON.parse` has none).
 */
export function isJson(b: Uint8Array, from: number, to = b.length): boolean {
  const view = b.subarray(0, to);
  const stack: number[] = [];
  let i = ws(view, from);
  for (;;) {
    // A value at `i`.
    const c = view[i];
    if (c === LBRACE || c === LBRACKET) {
      i = ws(view, i + 1);
      if (view[i] === (c === LBRACE ? RBRACE : RBRACKET)) i++;
      else {
        stack.push(c);
        if (c === LBRACE) {
          const k = stringEnd(view, i);
          if (k < 0) return false;
          i = ws(view, k);
          if (view[i] !== COLON) return false;
          i = ws(view, i + 1);
        }
        continue;
      }
    } else {
      const e = scalarEnd(view, i);
      if (e < 0) return false;
      i = e;
    }
    // After a value.
    for (;;) {
      i = ws(view, i);
      if (stack.length === 0) return i === view.length;
      const top = stack[stack.length - 1];
      if (view[i] === COMMA) {
        i = ws(view, i + 1);
        if (top === LBRACE) {
          const k = stringEnd(view, i);
          if (k < 0) return false;
          i = ws(view, k);
          if (view[i] !== COLON) return false;
          i = ws(view, i + 1);
        }
        break;
      }
      if (view[i] === (top === LBRACE ? RBRACE : RBRACKET)) {
        stack.pop();
        i++;
        continue;
      }
      return false;
    }
  }
}

/** End of the (valid) value at `i`. */
export function valueEnd(b: Uint8Array, i: number): number {
  const c = b[i];
  if (c !== LBRACE && c !== LBRACKET) return scalarEnd(b, i);
  let depth = 0;
  for (let j = i; j < b.length; j++) {
    const d = b[j];
    if (d === QUOTE) j = stringEnd(b, j) - 1;
    else if (d === LBRACE || d === LBRACKET) depth++;
    else if (d === RBRACE || d === RBRACKET) {
      if (--depth === 0) return j + 1;
    }
  }
  return b.length;
}

/** One member of an object: its key token and its value token. */
export interface Member {
  keyStart: number;
  keyEnd: number;
  valueStart: number;
  valueEnd: number;
}

/** The members of the (valid) object at `i`, in order. */
export function members(b: Uint8Array, i: number): Member[] {
  const out: Member[] = [];
  i = ws(b, i + 1);
  if (b[i] === RBRACE) return out;
  for (;;) {
    const keyEnd = stringEnd(b, i);
    const valueStart = ws(b, ws(b, keyEnd) + 1);
    const end = valueEnd(b, valueStart);
    out.push({ keyStart: i, keyEnd, valueStart, valueEnd: end });
    i = ws(b, end);
    if (b[i] !== COMMA) return out;
    i = ws(b, i + 1);
  }
}

/** A key's text (keys of the levels read are names, not credentials). */
export function keyText(b: Uint8Array, m: Member): string {
  return JSON.parse(new TextDecoder().decode(b.subarray(m.keyStart, m.keyEnd)));
}

/** The last member named `name`, and every member so named. */
export function named(b: Uint8Array, ms: Member[], name: string): Member[] {
  return ms.filter((m) => keyText(b, m) === name);
}

/**
 * The value of the top-level string member `name` (the last one, as `JSON.parse` keeps) of the JSON object
 * in `bytes`, decoded into a buffer of its own (UTF-8; zero it once used) — for credentials that arrive
 * in a JSON answer (a minted signed URL). Null when `bytes` is not such an object or has no such string.
 */
export function readStringMember(bytes: Uint8Array, name: string): ByteBuffer | null {
  const bom = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  const root = ws(bytes, bom);
  if (!isJson(bytes, bom) || bytes[root] !== LBRACE) return null;
  const m = named(bytes, members(bytes, root), name).at(-1);
  if (!m || bytes[m.valueStart] !== QUOTE) return null;
  const out = new ByteBuffer(m.valueEnd - m.valueStart);
  decodeJsonString(bytes, m.valueStart + 1, m.valueEnd - 1, (cp) => out.codePoint(cp));
  return out;
}
