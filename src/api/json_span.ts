/**
 * Finds where a value sits in the bytes of a JSON document, without decoding the values it skips. The
 * create-session route uses it to copy the provider credentials from the request body's bytes straight into
 * their holder (see `src/runtime/credential_holder.ts`), so no second string of them is built.
 *
 * @module
 */

const QUOTE = 0x22, BACKSLASH = 0x5c, LBRACE = 0x7b, RBRACE = 0x7d, LBRACKET = 0x5b, RBRACKET = 0x5d;
const COLON = 0x3a, COMMA = 0x2c;

function isSpace(b: number): boolean {
  return b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d;
}

function skipSpace(bytes: Uint8Array, i: number): number {
  while (i < bytes.length && isSpace(bytes[i])) i++;
  return i;
}

/** End (exclusive) of the string token starting at `i` (a quote). */
function endOfString(bytes: Uint8Array, i: number): number {
  for (let j = i + 1; j < bytes.length; j++) {
    if (bytes[j] === BACKSLASH) j++;
    else if (bytes[j] === QUOTE) return j + 1;
  }
  throw new SyntaxError("unterminated string");
}

/** End (exclusive) of the value starting at `i`. */
function endOfValue(bytes: Uint8Array, i: number): number {
  const b = bytes[i];
  if (b === QUOTE) return endOfString(bytes, i);
  if (b === LBRACE || b === LBRACKET) {
    let depth = 0;
    for (let j = i; j < bytes.length; j++) {
      const c = bytes[j];
      if (c === QUOTE) j = endOfString(bytes, j) - 1;
      else if (c === LBRACE || c === LBRACKET) depth++;
      else if (c === RBRACE || c === RBRACKET) {
        if (--depth === 0) return j + 1;
      }
    }
    throw new SyntaxError("unterminated value");
  }
  let j = i;
  while (
    j < bytes.length && !isSpace(bytes[j]) && bytes[j] !== COMMA && bytes[j] !== RBRACE &&
    bytes[j] !== RBRACKET
  ) {
    j++;
  }
  return j;
}

/** `[start, end)` of the value of `key` in the object starting at `i` (the last one, as JSON.parse keeps). */
function memberSpan(bytes: Uint8Array, i: number, key: string): [number, number] | null {
  i = skipSpace(bytes, i);
  if (bytes[i] !== LBRACE) return null;
  let found: [number, number] | null = null;
  i = skipSpace(bytes, i + 1);
  if (bytes[i] === RBRACE) return null;
  for (;;) {
    if (bytes[i] !== QUOTE) throw new SyntaxError("expected a key");
    const keyEnd = endOfString(bytes, i);
    // Keys are short and not secret: decode them (escapes included) to compare.
    const name = JSON.parse(new TextDecoder().decode(bytes.subarray(i, keyEnd)));
    i = skipSpace(bytes, keyEnd);
    if (bytes[i] !== COLON) throw new SyntaxError("expected ':'");
    const start = skipSpace(bytes, i + 1);
    const end = endOfValue(bytes, start);
    if (name === key) found = [start, end];
    i = skipSpace(bytes, end);
    if (bytes[i] === COMMA) {
      i = skipSpace(bytes, i + 1);
      continue;
    }
    if (bytes[i] === RBRACE) return found;
    throw new SyntaxError("expected ',' or '}'");
  }
}

/**
 * `[start, end)` of the value at `path` (object keys from the root) in the JSON document `bytes`, or null
 * when a key is absent. `bytes` must be valid JSON (parse it first); throws a SyntaxError otherwise.
 */
export function valueSpan(bytes: Uint8Array, path: readonly string[]): [number, number] | null {
  const bom = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  let span: [number, number] = [skipSpace(bytes, bom), bytes.length];
  for (const key of path) {
    const next = memberSpan(bytes.subarray(0, span[1]), span[0], key);
    if (!next) return null;
    span = next;
  }
  return span;
}
