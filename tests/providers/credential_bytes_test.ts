/**
 * The byte-level handling of credentials agrees with what it replaces, on thousands of generated inputs:
 * JSON validity and string decoding (`JSON.parse`), the URL split, host, request target, path and query
 * (the WHATWG parser of `new URL` and `URLSearchParams`), the signed-URL rules (the string version this
 * change replaced, kept here as the reference), the URL fields' validation skeleton (`urlProblem` of the
 * original and of the skeleton agree), the character table of the URL fields (the expression, for every
 * code point), and the encodings a credential is sent in.
 */
import assert from "node:assert/strict";
import {
  ByteBuffer,
  decodeJsonString,
  formEncode,
  latin1Bytes,
  URL_FORBIDDEN_RANGES,
  urlForbidden,
} from "../../src/auth/credential_bytes.ts";
import {
  eachQueryPair,
  pathIs,
  splitUrl,
  urlHost,
  urlSkeleton,
  writeTarget,
} from "../../src/auth/credential_url.ts";
import { readCredentials } from "../../src/providers/definitions/credential_reader.ts";
import { isJson, readStringMember } from "../../src/auth/credential_json.ts";
import { signedUrlProblem } from "../../src/providers/definitions/vendor3_signed_url.ts";
import { VENDOR3_SIGNED_URL_PATH } from "../../src/providers/definitions/vendor3_signed_url.ts";
import { urlProblem } from "../../src/text_fields.ts";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ---------- the reference: the signed-URL rules as they were, on strings ----------
const CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz";
const SIGNATURE = /^cvtkn_[0-9a-z]*?([0-7][0-9a-hjkmnp-tv-z]{25})$/i;
function referenceMintedAt(url: URL, now: number): number | null {
  const token = url.searchParams.get("conversation_signature") ?? url.searchParams.get("token");
  const ulid = token ? SIGNATURE.exec(token)?.[1]?.toLowerCase() : undefined;
  if (!ulid) return null;
  let ms = 0;
  for (const c of ulid.slice(0, 10)) ms = ms * 32 + CROCKFORD.indexOf(c);
  return ms >= Date.UTC(2020, 0, 1) && ms <= now + 86_400_000 ? ms : null;
}
function referenceProblem(raw: string, allowedHosts: readonly string[], now: number): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "provider_config: signed_url is not a URL";
  }
  if (url.protocol !== "wss:" || url.pathname !== VENDOR3_SIGNED_URL_PATH) {
    return `provider_config: signed_url must be a wss:// URL with path ${VENDOR3_SIGNED_URL_PATH}`;
  }
  if (url.username || url.password || !allowedHosts.includes(url.hostname.toLowerCase())) {
    return "provider_config: signed_url must be on an allowed host of the provider";
  }
  const minted = referenceMintedAt(url, now);
  if (minted !== null && now - minted > 15 * 60_000) {
    return "provider_config: signed_url has expired (signed URLs are valid for 15 minutes; mint a new one)";
  }
  return null;
}

// ---------- generated URLs ----------
const NOW = Date.UTC(2026, 5, 1);
function ulidAt(ms: number, r: () => number): string {
  let time = "";
  for (let i = 0, t = ms; i < 10; i++, t = Math.floor(t / 32)) time = CROCKFORD[t % 32] + time;
  let rand = "";
  for (let i = 0; i < 16; i++) rand += CROCKFORD[Math.floor(r() * 32)];
  return time + rand;
}

function urls(seed: number, n: number): string[] {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)];
  const CHARS = [
    "a",
    "Z",
    "0",
    ".",
    "..",
    "%",
    "%2e",
    "%2E",
    "%41",
    "%zz",
    "/",
    "\\",
    "?",
    "#",
    "@",
    ":",
    "&",
    "=",
    "+",
    "'",
    '"',
    "<",
    ">",
    "`",
    "{",
    "}",
    "^",
    "|",
    "é",
    "😀",
    "中",
    "\u00a0",
    "\ufffd",
    "~",
    "!",
    "$",
    "[",
    "]",
  ];
  const junk = (k: number) => Array.from({ length: Math.floor(r() * k) }, () => pick(CHARS)).join("");
  const sig = () =>
    pick([
      `cvtkn_${ulidAt(NOW - 10 * 60_000, r)}`,
      `cvtkn_${ulidAt(NOW - 20 * 60_000, r)}`,
      `CVTKN_x${ulidAt(NOW - 20 * 60_000, r).toUpperCase()}`,
      `cvtkn_${ulidAt(NOW + 2 * 86_400_000, r)}`,
      `cvtkn_${ulidAt(Date.UTC(2019, 1, 1), r)}`,
      `cvtkn_8${ulidAt(NOW, r).slice(1)}`,
      "cvtkn_",
      "",
      junk(8),
    ]);
  return Array.from({ length: n }, () => {
    const scheme = pick(["wss://", "wss://", "wss://", "wss:///", "wss:\\\\", "wss://\\/"]);
    const user = pick(["", "", "", "u@", ":@", "u:p@", ":p@", "a@b@", `${junk(4)}@`, "@"]);
    const host = pick([
      "api.elevenlabs.io",
      "API.elevenlabs.IO",
      "localhost:8443",
      "localhost:443",
      "localhost:0",
      "127.0.0.1",
      "127.1",
      "0x7f.1",
      "[::1]",
      "[::ffff:1.2.3.4]:99",
      "[::1",
      "münchen.de",
      "xn--mnchen-3ya.de",
      "ex%41mple.com",
      "%zz",
      "a..b",
      "",
      ":443",
      "h:65536",
      "h:1a",
      "h:",
      junk(6),
    ]);
    const path = pick([
      "",
      "/",
      "/v1/convai/conversation",
      "/v1/convai/./conversation",
      "/v1/x/../convai/conversation",
      "\\v1\\convai\\conversation",
      "/v1/convai/conversation/.",
      "/v1/convai/conversation/..",
      "/v1/%63onvai/conversation",
      `/${junk(6)}`,
      `/v1/convai/conversation${junk(3)}`,
    ]);
    const query = pick([
      "",
      "?",
      `?conversation_signature=${sig()}`,
      `?agent_id=a&conversation_signature=${sig()}`,
      `?token=${sig()}`,
      `?token=${sig()}&conversation_signature=${sig()}`,
      `?conversation_signature=${sig()}&conversation_signature=${sig()}`,
      `?conversation%5Fsignature=${sig()}`,
      `?${junk(8)}`,
    ]);
    const fragment = pick(["", "", "#", `#${junk(4)}`]);
    return scheme + user + host + path + query + fragment;
  });
}

Deno.test("byte URLs: the split, host, request target, path and query agree with the URL parser", () => {
  let parsed = 0;
  for (const s of urls(1, 6000)) {
    // The byte functions see only what passed the URL fields' first rules (no such character, wss://).
    if (/[\s\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u.test(s) || !s.startsWith("wss://")) continue;
    const bytes = enc(s);
    const split = splitUrl(bytes, "wss");
    assert.ok(split, s);
    let url: URL | null = null;
    try {
      url = new URL(s);
    } catch { /* does not parse */ }
    const host = urlHost(bytes, split);
    assert.equal(host !== null, url !== null && url.hostname !== "", `parses: ${s}`);
    if (!url || !host) continue;
    parsed++;
    assert.equal(host.hostname, url.hostname, s);
    assert.equal(host.host, url.host, s);
    assert.equal(host.port, url.port ? Number(url.port) : 443, s);
    const target = new ByteBuffer();
    writeTarget(bytes, split, target);
    assert.equal(dec(target.view()), url.pathname + url.search, `target of ${s}`);
    assert.equal(pathIs(bytes, split, VENDOR3_SIGNED_URL_PATH), url.pathname === VENDOR3_SIGNED_URL_PATH, s);
    assert.equal(!!(split.userinfo?.usernameNonEmpty), url.username !== "", `username of ${s}`);
    assert.equal(!!(split.userinfo?.passwordNonEmpty), url.password !== "", `password of ${s}`);
    const pairs: [string, string][] = [];
    eachQueryPair(bytes, split, (n, v) => {
      pairs.push([dec(n), dec(v)]);
      return false;
    });
    assert.deepEqual(pairs, [...url.searchParams], `query of ${s}`);
  }
  assert.ok(parsed > 1500, `${parsed} URLs parsed`);
});

Deno.test("byte URLs: the signed-URL rules answer as the string rules they replaced", () => {
  const hosts = ["api.elevenlabs.io", "localhost"];
  const seen = new Set<string | null>();
  for (const s of urls(2, 6000)) {
    if (/[\s\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u.test(s) || !s.startsWith("wss://")) continue;
    const want = referenceProblem(s, hosts, NOW);
    // The reference calls a URL that does not parse "not a URL"; the schema refuses those before.
    if (want === "provider_config: signed_url is not a URL") continue;
    assert.equal(signedUrlProblem(enc(s), hosts, NOW), want, s);
    seen.add(want);
  }
  assert.equal(seen.size, 4, `every answer reached: ${[...seen].join(" | ")}`);
});

Deno.test("byte URLs: the validation skeleton is judged as the original, with its length", () => {
  const check = (u: URL) => u.pathname === VENDOR3_SIGNED_URL_PATH ? null : "path";
  const lengths = (s: string) => [...s].length;
  for (
    const s of [
      ...urls(3, 4000),
      "",
      "x",
      "wss:",
      "wss:/",
      "ws://a",
      "https://a",
      "wss://a b",
      "\u200bwss://a",
    ]
  ) {
    const bytes = enc(s);
    const forbidden = /[\s\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u.test(s);
    for (const required of [undefined, VENDOR3_SIGNED_URL_PATH]) {
      const skeleton = urlSkeleton(bytes, lengths(s), forbidden, "wss", required);
      assert.equal(lengths(skeleton), lengths(s), `length of the skeleton of ${s}`);
      const rule = required ? check : undefined;
      assert.equal(urlProblem(skeleton, "wss", rule), urlProblem(s, "wss", rule), `${s} → ${skeleton}`);
    }
  }
});

Deno.test("JSON: validity and string decoding agree with JSON.parse (bytes, invalid UTF-8 and escapes included)", () => {
  const r = rng(4);
  const pieces = [
    '"',
    "\\",
    "\\u",
    "\\ud800",
    "\\udc00",
    "\\ud83d\\ude00",
    "\\n",
    "\\x",
    "a",
    "é",
    "😀",
    "\u2028",
    "{",
    "}",
    "[",
    "]",
    ":",
    ",",
    " ",
    "\t",
    "1",
    "-",
    "0.5",
    "1e5",
    "01",
    "true",
    "nul",
    "null",
    "\u0001",
    "\ufeff",
  ];
  const raw = [[0xff], [0xc3], [0xe2, 0x82], [0xf0, 0x9f, 0x98], [0xed, 0xa0, 0x80], [0x80]];
  let valid = 0;
  for (let n = 0; n < 20000; n++) {
    const parts: number[] = [];
    const k = 1 + Math.floor(r() * 8);
    for (let i = 0; i < k; i++) {
      if (r() < 0.1) parts.push(...raw[Math.floor(r() * raw.length)]);
      else parts.push(...enc(pieces[Math.floor(r() * pieces.length)]));
    }
    // Half are made into strings, so that string decoding is exercised.
    const bytes = r() < 0.5 ? Uint8Array.from([0x22, ...parts, 0x22]) : Uint8Array.from(parts);
    let want: unknown;
    let ok = true;
    try {
      want = JSON.parse(dec(bytes));
    } catch {
      ok = false;
    }
    // TextDecoder drops one leading BOM, as the body's decoding does (the reader starts after it too).
    const bom = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
    assert.equal(isJson(bytes, bom), ok, `${JSON.stringify(dec(bytes))}`);
    if (!ok || typeof want !== "string") continue;
    valid++;
    const got: number[] = [];
    const units = decodeJsonString(bytes, 1, bytes.length - 1, (cp) => got.push(cp));
    assert.equal(units, want.length);
    const wantCps: number[] = [];
    for (const c of want) wantCps.push(c.codePointAt(0)!);
    assert.deepEqual(got, wantCps, JSON.stringify(want));
  }
  assert.ok(valid > 1000, `${valid} strings decoded`);
});

Deno.test("JSON: the reader finds the last credential of the body's provider, blanks every one, and reads answers", () => {
  const body = enc(
    '{"provider_type":"vendor3","provider_config":{"vendor3":{"agent_id":"a","api_key":"first","api_key":"k\\u0065y2"},' +
      '"vendor1_realtime":{"client_secret":"other"}},"provider_config":{"vendor3":{"agent_id":"b","api_key":"key\\u00e9",' +
      '"signed_url":"wss://api.elevenlabs.io/v1/convai/conversation?conversation_signature=s1g"}}}',
  );
  const read = readCredentials(body);
  const blanked = dec(read.blanked);
  for (const secret of ["first", "key2", "keyé", "other", "s1g"]) {
    assert.ok(!blanked.includes(secret), blanked);
  }
  assert.equal(read.found?.providerType, "vendor3");
  assert.equal(dec(read.found!.secrets.get("api_key")!), "keyé");
  assert.equal(dec(read.found!.secrets.get("signed_url")!).endsWith("=s1g"), true);
  assert.deepEqual(JSON.parse(blanked).provider_config.vendor3.api_key, "xxxx");
  read.zero();
  assert.ok(read.found!.secrets.get("api_key")!.every((b) => b === 0), "zeroed");
  const answer = readStringMember(enc('{"signed_url":"wss://h/p?\\u0074oken=1","other":2}'), "signed_url");
  assert.equal(dec(answer!.view()), "wss://h/p?token=1");
  assert.equal(readStringMember(enc('{"signed_url":1}'), "signed_url"), null);
  assert.equal(readStringMember(enc("not json"), "signed_url"), null);
});

Deno.test("the URL fields' character table is the expression's, for every code point", () => {
  const re = /[\s\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u;
  for (let cp = 0; cp <= 0x10ffff; cp++) {
    const s = cp >= 0xd800 && cp <= 0xdfff ? String.fromCharCode(cp) : String.fromCodePoint(cp);
    if (urlForbidden(cp) !== re.test(s)) assert.fail(`U+${cp.toString(16)}: table ${urlForbidden(cp)}`);
  }
  assert.ok(URL_FORBIDDEN_RANGES.length > 10);
});

Deno.test("encodings: form encoding as URLSearchParams writes it; header bytes as Latin-1, or refused", () => {
  const r = rng(5);
  for (let n = 0; n < 2000; n++) {
    const s = Array.from(
      { length: Math.floor(r() * 12) },
      () =>
        String.fromCodePoint(
          [0x20, 0x2b, 0x26, 0x3d, 0x25, 0x61, 0x2a, 0x7e, 0xe9, 0x20ac, 0x1f600][Math.floor(r() * 11)],
        ),
    ).join("");
    const out = new ByteBuffer();
    formEncode(enc(s), out);
    assert.equal(dec(out.view()), new URLSearchParams({ k: s }).toString().slice(2), s);
  }
  const out = new ByteBuffer();
  assert.equal(latin1Bytes(enc("Bearer é\t~"), out), true);
  assert.deepEqual([...out.view()], [...enc("Bearer "), 0xe9, 0x09, 0x7e]);
  for (const bad of ["€", "\n", "\u007f", "\u0000", "😀"]) {
    assert.equal(latin1Bytes(enc(bad), new ByteBuffer()), false);
  }
});
