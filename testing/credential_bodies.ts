/**
 * A deterministic generator of create-session bodies — as bytes — that stress the credential fields: every
 * provider's credential fields (and the fields next to them) with valid and malformed values of every JSON
 * type; strings with escapes, controls, non-ASCII, lone surrogates, invalid UTF-8 and lengths around every
 * limit; URLs with every part varied (scheme, slashes, userinfo, host, port, path with dot segments and
 * backslashes, query with signatures of known minting times, fragment); header dictionaries with valid,
 * invalid, reserved, numeric and duplicated names and up to 40 entries; duplicated keys, escaped keys,
 * `provider_connection_id` in odd places, and bodies that are not JSON at all.
 *
 * The same seed gives the same bodies (bytes), so answers recorded against one checkout can be compared
 * with another's (tests/api/credential_validation_test.ts, tests/fixtures/record_validation_answers.ts).
 *
 * @module
 */

/** The time the generated signatures are relative to (the harness's clock is set to it). */
export const FIXED_NOW = Date.UTC(2026, 5, 1, 12, 0, 0);

/** mulberry32: a small seeded PRNG. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A JSON text under construction: bytes, written piece by piece (raw bytes allowed). */
class Out {
  parts: number[] = [];
  text(s: string): this {
    for (const b of new TextEncoder().encode(s)) this.parts.push(b);
    return this;
  }
  raw(bytes: number[]): this {
    this.parts.push(...bytes);
    return this;
  }
  bytes(): Uint8Array<ArrayBuffer> {
    return Uint8Array.from(this.parts);
  }
}

/** A piece of a JSON string's content: literal text, an escape, or raw bytes (maybe invalid UTF-8). */
type Piece = { t: string } | { e: string } | { b: number[] };

const CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz";
function ulid(ms: number, r: () => number): string {
  let time = "";
  for (let i = 0, t = ms; i < 10; i++, t = Math.floor(t / 32)) time = CROCKFORD[t % 32] + time;
  let rand = "";
  for (let i = 0; i < 16; i++) rand += CROCKFORD[Math.floor(r() * 32)];
  return time + rand;
}

/** Builds one generator run. */
export function generateBodies(seed: number, count: number): Uint8Array<ArrayBuffer>[] {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
  const chance = (p: number) => r() < p;
  const int = (a: number, b: number) => a + Math.floor(r() * (b - a + 1));

  // ---------- string contents ----------
  const TEXT_PIECES: Piece[] = [
    { t: "a" },
    { t: "ek_" },
    { t: "Bearer " },
    { t: "0123456789" },
    { t: " " },
    { t: "\t" },
    { t: "é" },
    { t: "€" },
    { t: "中文" },
    { t: "😀" },
    { t: "\u00a0" },
    { t: "\u200b" },
    { t: "\ufeff" },
    { t: "\u2028" },
    { t: "\ufffd" },
    { t: "\u007f" },
    { t: "\u0085" },
    { t: "\u061c" },
    { t: "\u{e0041}" },
    { t: "%41" },
    { t: "+" },
    { t: "&" },
    { t: "=" },
    { t: "?" },
    { t: "#" },
    { t: "/" },
    { t: "'" },
    { t: "<>" },
    { t: "`{}|^" },
    { e: "\\n" },
    { e: "\\t" },
    { e: "\\r" },
    { e: "\\b" },
    { e: "\\f" },
    { e: "\\/" },
    { e: "\\\\" },
    { e: '\\"' },
    { e: "\\u0001" },
    { e: "\\u001f" },
    { e: "\\u0041" },
    { e: "\\u00e9" },
    { e: "\\u007F" },
    { e: "\\ud83d\\ude00" },
    { e: "\\ud800" },
    { e: "\\udc00" },
    { e: "\\ud800\\ud800" },
    { e: "\\uD83D" },
    { e: "\\u200B" },
    { e: "\\u0000" },
    { b: [0xff] },
    { b: [0xc3] },
    { b: [0xe2, 0x82] },
    { b: [0xf0, 0x9f, 0x98] },
    { b: [0xc0, 0xaf] },
    { b: [0xed, 0xa0, 0x80] },
    { b: [0xf4, 0x90, 0x80, 0x80] },
    { b: [0x80] },
  ];

  /** Random string content: a mix of pieces, sometimes around a length limit. */
  const content = (limit: number | null): Piece[] => {
    const out: Piece[] = [];
    const mode = r();
    if (limit !== null && mode < 0.25) {
      const n = limit + pick([-1, 0, 1, 2]);
      out.push({ t: "x".repeat(Math.max(0, n - 1)) });
      if (chance(0.5)) out.push(pick(TEXT_PIECES));
      else out.push({ t: "y" });
      return out;
    }
    if (mode < 0.35) return [];
    const n = int(1, 6);
    for (let i = 0; i < n; i++) out.push(chance(0.5) ? { t: `s${int(0, 999)}` } : pick(TEXT_PIECES));
    return out;
  };

  const writeString = (o: Out, pieces: Piece[]) => {
    o.text('"');
    for (const p of pieces) {
      if ("t" in p) {
        let text = "";
        for (const c of p.t.replaceAll("\\", "\\\\").replaceAll('"', '\\"')) {
          text += c.charCodeAt(0) < 0x20 ? `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}` : c;
        }
        o.text(text);
      } else if ("e" in p) o.text(p.e);
      else o.raw(p.b);
    }
    o.text('"');
  };

  /** A key, sometimes written with escapes. */
  const writeKey = (o: Out, key: string) => {
    if (chance(0.08) && key.length > 2) {
      const i = int(0, key.length - 1);
      const esc = `\\u${key.charCodeAt(i).toString(16).padStart(4, "0")}`;
      writeString(o, [{ t: key.slice(0, i) }, { e: esc }, { t: key.slice(i + 1) }]);
    } else writeString(o, [{ t: key }]);
  };

  // ---------- values ----------
  type Writer = (o: Out) => void;
  const jsonValue = (v: unknown): Writer => (o) => o.text(JSON.stringify(v));

  /** Something that is not a string. */
  const nonString = (): Writer =>
    pick<Writer>([
      jsonValue(42),
      jsonValue(-0.5e3),
      jsonValue(true),
      jsonValue(false),
      jsonValue(null),
      jsonValue({}),
      jsonValue([]),
      jsonValue({ value: "secretvalue" }),
      jsonValue(["secretvalue"]),
      jsonValue({ provider_connection_id: "pc_1" }),
      jsonValue([{ a: { Provider_Connection_Id: 1 } }]),
      jsonValue({ deep: { deeper: [{ x: 1 }] } }),
      (o) => o.text("12345678901234567890"),
    ]);

  const stringValue = (limit: number | null): Writer => (o) => writeString(o, content(limit));

  /** A credential-ish value: mostly strings, sometimes other JSON types. */
  const credential = (limit: number): Writer => chance(0.15) ? nonString() : stringValue(limit);

  const SCHEMES = [
    "wss://",
    "wss://",
    "wss://",
    "WSS://",
    "ws://",
    "https://",
    "wss:/",
    "wss:///",
    "wss:\\\\",
    "",
    "wss://\\",
  ];
  const USERINFO = ["", "", "", "", "u@", ":p@", "u:p@", "@", ":@", "a@b@", "us%40er:pa:ss@"];
  const HOSTS = [
    "api.elevenlabs.io",
    "API.ElevenLabs.io",
    "localhost",
    "localhost:8443",
    "localhost:443",
    "localhost:0443",
    "127.0.0.1",
    "[::1]",
    "[::1]:9000",
    "evil.example",
    "api.eu.residency.elevenlabs.io",
    "münchen.de",
    "ex%41mple.com",
    "exa mple.com",
    "",
    "host:99999",
    "host:abc",
    "a..b",
    "%zz",
    "xn--nxasmq6b.com",
    "[::1",
    "host:",
  ];
  const PATHS = [
    "",
    "/",
    "/v1/convai/conversation",
    "/v1/convai/conversation",
    "/v1/convai/./conversation",
    "/v1/convai/../convai/conversation",
    "/v1/x/%2e%2E/convai/conversation",
    "\\v1\\convai\\conversation",
    "/v1/convai/conversation/",
    "/v1/convai/conversation/.",
    "/v1/%63onvai/conversation",
    "/V1/convai/conversation",
    "/v0",
    "/v0/engine",
    "/a b",
    "/é/😀",
    "/`{}",
    "//v1/convai/conversation",
  ];
  const signature = () => {
    const when = pick([
      FIXED_NOW - 12 * 60_000,
      FIXED_NOW - 18 * 60_000,
      FIXED_NOW + 3 * 86_400_000,
      Date.UTC(2019, 0, 1),
    ]);
    return pick([
      `cvtkn_${ulid(when, r)}`,
      `cvtkn_ab${ulid(when, r)}`,
      `CVTKN_${ulid(when, r).toUpperCase()}`,
      "cvtkn_short",
      `cvtkn_${ulid(when, r)}!`,
      "opaque",
    ]);
  };
  const QUERIES = () =>
    pick([
      "",
      "",
      "?",
      `?agent_id=a&conversation_signature=${signature()}`,
      `?conversation_signature=${signature()}&agent_id=a`,
      `?token=${signature()}`,
      `?token=${signature()}&conversation_signature=${signature()}`,
      `?conversation_signature=${signature()}&conversation_signature=${signature()}`,
      `?conversation%5Fsignature=${signature()}`,
      `?k=secret${int(0, 99)}`,
      "?a=%ZZ&b=+c&&=d",
      "?q=é'\"<>",
    ]);
  const FRAGMENTS = ["", "", "", "#", "#frag", "#a?b"];

  /** A URL value (string of parts, or raw pieces), or something else; `focus`: mostly well-formed. */
  const urlValue = (max: number, focus = false): Writer => {
    const x = r();
    if (x < (focus ? 0.03 : 0.08)) return nonString();
    if (x < (focus ? 0.05 : 0.16)) return stringValue(max);
    return (o) => {
      const url = focus
        ? (chance(0.9) ? "wss://" : pick(SCHEMES)) + (chance(0.85) ? "" : pick(USERINFO)) +
          (chance(0.6)
            ? pick(["api.elevenlabs.io", "localhost", "API.ElevenLabs.io", "localhost:8443"])
            : pick(HOSTS)) +
          (chance(0.6) ? "/v1/convai/conversation" : pick(PATHS)) + QUERIES() +
          (chance(0.85) ? "" : pick(FRAGMENTS))
        : pick(SCHEMES) + pick(USERINFO) + pick(HOSTS) + pick(PATHS) + QUERIES() + pick(FRAGMENTS);
      const pieces: Piece[] = [{ t: url }];
      if (chance(0.1)) pieces.splice(int(0, 1), 0, pick(TEXT_PIECES));
      if (chance(0.05)) pieces.push({ t: "x".repeat(max - url.length + int(-1, 1)) });
      writeString(o, pieces);
    };
  };

  const HEADER_NAMES = [
    "Authorization",
    "X-Api-Key",
    "x-engine-token",
    "X-Custom",
    "bad name",
    "bad:name",
    "",
    "Host",
    "connection",
    "Upgrade",
    "Sec-WebSocket-Key",
    "sec-websocket-protocol",
    "Content-Length",
    "provider_connection_id",
    "PROVIDER_CONNECTION_ID",
    "__proto__",
    "constructor",
    "0",
    "1",
    "42",
    "4294967295",
    "é",
    "x".repeat(256),
    "x".repeat(257),
  ];

  const headersValue = (): Writer => {
    const x = r();
    if (x < 0.1) return nonString();
    if (x < 0.15) return stringValue(null);
    return (o) => {
      const n = pick([0, 1, 1, 2, 3, 5, 32, 33, 40]);
      o.text("{");
      for (let i = 0; i < n; i++) {
        if (i) o.text(",");
        const name = chance(0.7) ? pick(HEADER_NAMES) : `X-H${int(0, 50)}`;
        writeKey(o, name);
        o.text(":");
        (chance(0.1) ? nonString() : stringValue(8192))(o);
      }
      o.text("}");
    };
  };

  // ---------- provider configs ----------
  const fieldsOf = (type: string, focus: boolean): [string, Writer][] => {
    const plain = (limit: number) => focus ? jsonValue(`agent_${int(0, 9)}`) : credential(limit);
    switch (type) {
      case "vendor1_realtime":
        return [["client_secret", credential(8192)]];
      case "vendor2":
        return [["access_token", credential(8192)], ["agent_id", plain(256)]];
      case "vendor3": {
        const f: [string, Writer][] = [["agent_id", plain(256)]];
        if (chance(0.5)) f.push(["api_key", credential(8192)]);
        if (chance(focus ? 0.8 : 0.6)) f.push(["signed_url", urlValue(4096, focus)]);
        return f;
      }
      default: {
        const f: [string, Writer][] = [["url", urlValue(2048, focus)], ["auth_headers", headersValue()]];
        if (chance(0.3)) {
          f.push([
            "user_sample_rate",
            jsonValue(pick([8000, 16000, 24000, 48000, 7999, 48001, 22050.5, "24000"])),
          ]);
        }
        return f;
      }
    }
  };

  const TYPES = ["vendor1_realtime", "vendor2", "vendor3", "external_engine"];

  const object = (o: Out, members: [string, Writer][]) => {
    o.text(pick(["{", "{ ", "{\n  "]));
    members.forEach(([k, w], i) => {
      if (i) o.text(pick([",", ", ", ",\n  "]));
      writeKey(o, k);
      o.text(pick([":", ": ", " : "]));
      w(o);
    });
    o.text(pick(["}", " }", "\n}"]));
  };

  const providerObject = (type: string, focus = false): Writer => (o) => {
    const fields = fieldsOf(type, focus);
    // missing, duplicated, extra and reordered fields
    const odd = focus ? 0.2 : 1;
    if (chance(0.08 * odd) && fields.length) fields.splice(int(0, fields.length - 1), 1);
    if (chance(0.1 * odd) && fields.length) {
      fields.push([fields[0][0], chance(0.5) ? fields[0][1] : stringValue(null)]);
    }
    if (chance(0.08 * odd)) {
      fields.push([pick(["extra", "provider_connection_id", "Client_Secret"]), jsonValue("v")]);
    }
    if (chance(0.3)) fields.reverse();
    object(o, fields);
  };

  /** A body valid but for its credential fields (mostly). */
  const focused = (): Uint8Array<ArrayBuffer> => {
    const o = new Out();
    const type = pick(TYPES);
    const members: [string, Writer][] = [
      ["provider_type", jsonValue(type)],
      ["provider_config", (w) => object(w, [[type, providerObject(type, true)]])],
    ];
    if (chance(0.2)) members.push(["transport", jsonValue(pick(["auto", "websocket_fmp4"]))]);
    if (chance(0.2)) members.reverse();
    object(o, members);
    return o.bytes();
  };

  const body = (): Uint8Array<ArrayBuffer> => {
    if (chance(0.55)) return focused();
    const o = new Out();
    const x = r();
    const type = pick(TYPES);
    const members: [string, Writer][] = [];
    // provider_type
    const declared = chance(0.9) ? type : pick([...TYPES, "vendor9", "VENDOR2", ""]);
    if (chance(0.97)) members.push(["provider_type", chance(0.03) ? nonString() : jsonValue(declared)]);
    // provider_config
    if (chance(0.97)) {
      const cfg: [string, Writer][] = [[type, chance(0.04) ? nonString() : providerObject(type)]];
      if (chance(0.06)) cfg.push([pick(TYPES.filter((t) => t !== type)), providerObject(pick(TYPES))]);
      if (chance(0.04)) cfg.push([type, providerObject(type)]);
      if (chance(0.03)) cfg.push(["vendor9", jsonValue({ client_secret: "x" })]);
      if (chance(0.03)) cfg.splice(0, cfg.length);
      members.push(["provider_config", chance(0.03) ? nonString() : (w) => object(w, cfg)]);
      if (chance(0.03)) members.push(["provider_config", (w) => object(w, [[type, providerObject(type)]])]);
    }
    // the rest
    if (chance(0.2)) {
      members.push([
        "transport",
        jsonValue(pick(["auto", "websocket_fmp4", "webrtc_sfu", "carrier_pigeon", 1])),
      ]);
    }
    if (chance(0.15)) {
      members.push([
        "avatar_config",
        jsonValue(pick([{}, { avatar_id: "ada" }, { avatar_id: "" }, { bg_id: "nope" }, { x: 1 }])),
      ]);
    }
    if (chance(0.05)) {
      members.push(["webhook_url", jsonValue(pick(["http://example.com/h", "not a url", 5]))]);
    }
    if (chance(0.03)) members.push(["provider_connection_id", jsonValue("pc_123")]);
    if (chance(0.03)) members.push(["unknown", jsonValue(true)]);
    if (chance(0.2)) members.reverse();
    if (chance(0.02)) o.raw([0xef, 0xbb, 0xbf]);
    if (x < 0.02) o.text(pick(["", " ", "[]", "null", '"str"', "{}", "[{}]"]));
    else object(o, members);
    const bytes = o.bytes();
    // not JSON: cut short, a raw control character, a trailing comma
    const y = r();
    if (y < 0.02) return bytes.subarray(0, int(1, Math.max(1, bytes.length - 1)));
    if (y < 0.03) {
      const at = bytes.indexOf(0x22, int(0, bytes.length - 1));
      if (at >= 0) return Uint8Array.from([...bytes.subarray(0, at + 1), 0x01, ...bytes.subarray(at + 1)]);
    }
    if (y < 0.035) return Uint8Array.from([...bytes.subarray(0, bytes.length - 1), 0x2c, 0x7d]);
    return bytes;
  };

  return Array.from({ length: count }, body);
}

/** SHA-256 (hex) of every body, in order (to check two runs generate the same bodies). */
export async function bodiesDigest(bodies: Uint8Array[]): Promise<string> {
  const all = new Uint8Array(bodies.reduce((n, b) => n + b.length + 4, 0));
  let o = 0;
  for (const b of bodies) {
    new DataView(all.buffer).setUint32(o, b.length);
    all.set(b, o + 4);
    o += b.length + 4;
  }
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", all));
  return Array.from(d, (b) => b.toString(16).padStart(2, "0")).join("");
}
