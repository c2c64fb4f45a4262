/**
 * URLs that carry credentials (an external engine's `url`, a vendor3 signed URL, the URL a mint answers),
 * handled as UTF-8 bytes. The URL is split where the WHATWG URL parser splits a special URL: scheme,
 * userinfo, host and port, path, query, fragment. Only the host and port ever become a string (they are
 * where the service connects; the socket needs them as text): the userinfo, the path, the query and the
 * fragment stay bytes, and the request target (path and query, serialized as the parser serializes them)
 * is written from them into a buffer its user zeroes.
 *
 * The same split gives the validation of such a field its "skeleton": a string with the host of the
 * original and stand-ins of the same length and kind for the rest, which the URL rules (`urlProblem` of
 * `src/text_fields.ts`) judge exactly as they would judge the original.
 *
 * @module
 */
import { ByteBuffer, bytesEqual, formDecode, startsWith, urlEncode } from "./credential_bytes.ts";

/** Where each part of a special URL sits in its bytes. */
export interface UrlSplit {
  scheme: "wss" | "ws";
  /** Slashes and backslashes after `scheme://` (the parser ignores them). */
  extraSlashes: string;
  /** The userinfo before the host's `@`, if any. */
  userinfo: {
    start: number;
    end: number;
    usernameNonEmpty: boolean;
    colon: boolean;
    passwordNonEmpty: boolean;
  } | null;
  /** `host[:port]` as written. */
  hostStart: number;
  hostEnd: number;
  /** The path as written (from the host's end to the query or fragment). */
  pathStart: number;
  pathEnd: number;
  /** The query (after `?`, before `#`), if any. */
  query: { start: number; end: number } | null;
  /** The fragment (after `#`), if any. */
  fragment: { start: number; end: number } | null;
}

const SLASH = 0x2f, BACKSLASH = 0x5c, QUESTION = 0x3f, HASH = 0x23, AT = 0x40, COLON = 0x3a;

/** Splits `bytes` (a URL starting with `scheme://`; null otherwise) as the URL parser would. */
export function splitUrl(bytes: Uint8Array, scheme: "wss" | "ws"): UrlSplit | null {
  const prefix = `${scheme}://`;
  if (!startsWith(bytes, prefix)) return null;
  let i = prefix.length;
  let extraSlashes = "";
  while (i < bytes.length && (bytes[i] === SLASH || bytes[i] === BACKSLASH)) {
    extraSlashes += String.fromCharCode(bytes[i]);
    i++;
  }
  const authStart = i;
  while (
    i < bytes.length && bytes[i] !== SLASH && bytes[i] !== BACKSLASH && bytes[i] !== QUESTION &&
    bytes[i] !== HASH
  ) i++;
  const authEnd = i;
  let at = -1;
  for (let j = authStart; j < authEnd; j++) if (bytes[j] === AT) at = j;
  let userinfo: UrlSplit["userinfo"] = null;
  if (at >= 0) {
    let colon = -1;
    for (let j = authStart; j < at; j++) {
      if (bytes[j] === COLON) {
        colon = j;
        break;
      }
    }
    userinfo = {
      start: authStart,
      end: at,
      usernameNonEmpty: (colon < 0 ? at : colon) > authStart,
      colon: colon >= 0,
      passwordNonEmpty: colon >= 0 && at > colon + 1,
    };
  }
  const pathStart = authEnd;
  let pathEnd = pathStart;
  while (pathEnd < bytes.length && bytes[pathEnd] !== QUESTION && bytes[pathEnd] !== HASH) pathEnd++;
  let query: UrlSplit["query"] = null;
  let fragment: UrlSplit["fragment"] = null;
  if (pathEnd < bytes.length && bytes[pathEnd] === QUESTION) {
    let q = pathEnd + 1;
    while (q < bytes.length && bytes[q] !== HASH) q++;
    query = { start: pathEnd + 1, end: q };
    if (q < bytes.length) fragment = { start: q + 1, end: bytes.length };
  } else if (pathEnd < bytes.length) {
    fragment = { start: pathEnd + 1, end: bytes.length };
  }
  return {
    scheme,
    extraSlashes,
    userinfo,
    hostStart: at >= 0 ? at + 1 : authStart,
    hostEnd: authEnd,
    pathStart,
    pathEnd,
    query,
    fragment,
  };
}

/** The host and port of a split URL, as the URL parser reads them (null when they do not parse). */
export interface UrlHost {
  /** `url.hostname` */
  hostname: string;
  /** `url.host` (the Host header). */
  host: string;
  /** The port connected to (the scheme's default when none is given). */
  port: number;
}

/** Parses the host and port of `split` (non-secret text) as `new URL` would; null when they do not. */
export function urlHost(bytes: Uint8Array, split: UrlSplit): UrlHost | null {
  const text = new TextDecoder().decode(bytes.subarray(split.hostStart, split.hostEnd));
  if (split.userinfo && text === "") return null;
  try {
    const url = new URL(`${split.scheme}://${text}/`);
    if (!url.hostname) return null;
    return {
      hostname: url.hostname,
      host: url.host,
      port: url.port ? Number(url.port) : split.scheme === "wss" ? 443 : 80,
    };
  } catch {
    return null;
  }
}

/** The host text of a split URL, as written (for the validation skeleton). */
function hostText(bytes: Uint8Array, split: UrlSplit): string {
  return new TextDecoder().decode(bytes.subarray(split.hostStart, split.hostEnd));
}

function isSingleDot(b: Uint8Array, s: number, e: number): boolean {
  return (e - s === 1 && b[s] === 0x2e) ||
    (e - s === 3 && b[s] === 0x25 && b[s + 1] === 0x32 && (b[s + 2] | 0x20) === 0x65);
}

function isDoubleDot(b: Uint8Array, s: number, e: number): boolean {
  if (e - s === 2) return b[s] === 0x2e && b[s + 1] === 0x2e;
  if (e - s === 4) {
    return (isSingleDot(b, s, s + 1) && isSingleDot(b, s + 1, e)) ||
      (isSingleDot(b, s, s + 3) && isSingleDot(b, s + 3, e));
  }
  if (e - s === 6) return isSingleDot(b, s, s + 3) && isSingleDot(b, s + 3, e);
  return false;
}

/**
 * Writes the path of `split` as the URL parser serializes it (`url.pathname`: dot segments resolved,
 * backslashes as slashes, the path percent-encode set applied).
 */
export function writePath(bytes: Uint8Array, split: UrlSplit, into: ByteBuffer): void {
  const segments: [number, number][] = [];
  let i = split.pathStart;
  const end = split.pathEnd;
  if (i < end && (bytes[i] === SLASH || bytes[i] === BACKSLASH)) i++;
  for (;;) {
    let j = i;
    while (j < end && bytes[j] !== SLASH && bytes[j] !== BACKSLASH) j++;
    const slash = j < end;
    if (isDoubleDot(bytes, i, j)) {
      segments.pop();
      if (!slash) segments.push([0, 0]);
    } else if (isSingleDot(bytes, i, j)) {
      if (!slash) segments.push([0, 0]);
    } else segments.push([i, j]);
    if (!slash) break;
    i = j + 1;
  }
  for (const [s, e] of segments) {
    into.byte(SLASH);
    urlEncode(bytes, s, e, "path", into);
  }
  if (segments.length === 0) into.byte(SLASH);
}

/**
 * Writes the request target of `split` (path and query, as `url.pathname + url.search`: an empty query
 * is left out; the fragment is never sent).
 */
export function writeTarget(bytes: Uint8Array, split: UrlSplit, into: ByteBuffer): void {
  writePath(bytes, split, into);
  if (split.query && split.query.end > split.query.start) {
    into.byte(QUESTION);
    urlEncode(bytes, split.query.start, split.query.end, "query", into);
  }
}

/** Whether the serialized path of `split` is exactly `path` (ASCII). */
export function pathIs(bytes: Uint8Array, split: UrlSplit, path: string): boolean {
  const buf = new ByteBuffer(64);
  try {
    writePath(bytes, split, buf);
    const v = buf.view();
    return bytesEqual(v, 0, v.length, path);
  } finally {
    buf.zero();
  }
}

/**
 * Calls `visit` with every `name=value` pair of the query of `split`, decoded as `URLSearchParams` decodes
 * them (bytes; views valid for the call only), until it returns true.
 */
export function eachQueryPair(
  bytes: Uint8Array,
  split: UrlSplit,
  visit: (name: Uint8Array, value: Uint8Array) => boolean,
): void {
  if (!split.query) return;
  const name = new ByteBuffer(64);
  const value = new ByteBuffer(256);
  try {
    let i = split.query.start;
    const end = split.query.end;
    while (i <= end) {
      let j = i;
      while (j < end && bytes[j] !== 0x26) j++;
      if (j > i) {
        let eq = i;
        while (eq < j && bytes[eq] !== 0x3d) eq++;
        name.zero();
        value.zero();
        formDecode(bytes, i, eq, name);
        if (eq < j) formDecode(bytes, eq + 1, j, value);
        if (visit(name.view(), value.view())) return;
      }
      i = j + 1;
    }
  } finally {
    name.zero();
    value.zero();
  }
}

/** Length in code points (a lone surrogate counting one), as the schema's `max` measures strings. */
function codePointLength(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/**
 * The validation skeleton of a URL field (see the module's description): a string of `codePoints` code
 * points (the original's length as the schema's `max` measures it) that the URL rules judge as they judge
 * the original — whitespace or control characters
 * (`forbidden`), the scheme, whether it parses, its host, its userinfo's emptiness, and, with
 * `requiredPath`, whether its path is that one. The rest is letters.
 */
export function urlSkeleton(
  bytes: Uint8Array,
  codePoints: number,
  forbidden: boolean,
  scheme: "wss",
  requiredPath?: string,
): string {
  if (forbidden) return " " + "x".repeat(Math.max(0, codePoints - 1));
  const split = splitUrl(bytes, scheme);
  if (!split) return "x".repeat(codePoints);
  let user = "";
  if (split.userinfo) {
    const u = split.userinfo;
    user = `${u.usernameNonEmpty ? "u" : ""}${u.colon ? ":" : ""}${u.passwordNonEmpty ? "p" : ""}@`;
  }
  let path = "";
  if (split.pathEnd > split.pathStart) {
    path = requiredPath !== undefined && pathIs(bytes, split, requiredPath) ? requiredPath : "/";
  }
  const head = `${scheme}://${split.extraSlashes}${user}${hostText(bytes, split)}${path}`;
  const tail = `${split.query ? "?" : ""}${split.fragment ? "#" : ""}`;
  const pad = codePoints - codePointLength(head) - tail.length;
  if (pad <= 0) return head + tail;
  // Padding goes where no rule looks: the query, the fragment, or a query of its own.
  if (split.query) return `${head}?${"x".repeat(pad)}${split.fragment ? "#" : ""}`;
  if (split.fragment) return `${head}#${"x".repeat(pad)}`;
  return `${head}?${"x".repeat(pad - 1)}`;
}
