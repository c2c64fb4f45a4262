/**
 * HTTP/1.1 heads, as the wire writes and reads them: a request head written into a buffer the wire owns
 * (its credential parts copied in, the buffer zeroed once written), and a response head read from a
 * connection (status, headers with lower-case names, the bytes read past it), bounded in size. Shared by the
 * WebSocket upgrade (`upgrade.ts`) and the plain request (`http_request.ts`).
 *
 * @module
 */
import { ByteBuffer, latin1Bytes } from "../../auth/credential_bytes.ts";
import type { Endpoint, HeaderLine } from "./endpoint.ts";
import { WireError } from "./failure.ts";

/** Largest response head accepted. */
const MAX_HEAD_BYTES = 64 * 1024;

/** Writes the request head into an owned buffer; throws `invalid` for a header value that cannot be sent. */
export function writeHead(into: ByteBuffer, method: string, endpoint: Endpoint, headers: HeaderLine[]): void {
  into.ascii(`${method} `);
  for (const p of endpoint.target) typeof p === "string" ? into.ascii(p) : into.bytes(p);
  into.ascii(` HTTP/1.1\r\nHost: ${endpoint.host}\r\n`);
  for (const h of headers) {
    into.ascii(`${h.name}: `);
    for (const p of h.value) {
      if (typeof p === "string") into.ascii(p);
      else if (!latin1Bytes(p, into)) {
        into.zero();
        throw new WireError({ kind: "invalid" });
      }
    }
    into.ascii("\r\n");
  }
  into.ascii("\r\n");
}

/** A response head: status, headers (lower-case names), and the bytes read past it. */
export interface Head {
  status: number;
  headers: Map<string, string>;
  rest: Uint8Array;
}

/** Reads a response head (throws `unreachable` when the peer ends before one, `protocol` for a bad one). */
export async function readHead(conn: Deno.Conn): Promise<Head> {
  const acc = new ByteBuffer(4096);
  const buf = new Uint8Array(16 * 1024);
  try {
    for (;;) {
      const v = acc.view();
      const end = indexOfCrlfCrlf(v);
      if (end >= 0) {
        const head = parseHead(v.subarray(0, end));
        return { ...head, rest: v.slice(end + 4) };
      }
      if (v.length > MAX_HEAD_BYTES) throw new WireError({ kind: "protocol" });
      let n: number | null;
      try {
        n = await conn.read(buf);
      } catch {
        throw new WireError({ kind: acc.length ? "protocol" : "unreachable" });
      }
      if (n === null) throw new WireError({ kind: acc.length ? "protocol" : "unreachable" });
      acc.bytes(buf.subarray(0, n));
    }
  } finally {
    acc.zero();
    buf.fill(0);
  }
}

function indexOfCrlfCrlf(v: Uint8Array): number {
  for (let i = v.indexOf(0x0d); i >= 0 && i + 3 < v.length; i = v.indexOf(0x0d, i + 1)) {
    if (v[i + 1] === 0x0a && v[i + 2] === 0x0d && v[i + 3] === 0x0a) return i;
  }
  return -1;
}

function parseHead(bytes: Uint8Array): { status: number; headers: Map<string, string> } {
  // An engine's answer is not a credential: read as Latin-1 text.
  const lines = new TextDecoder("latin1").decode(bytes).split("\r\n");
  const m = /^HTTP\/1\.[01] (\d{3})(?: |$)/.exec(lines[0]);
  if (!m) throw new WireError({ kind: "protocol" });
  const headers = new Map<string, string>();
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers.set(name, headers.has(name) ? `${headers.get(name)}, ${value}` : value);
  }
  return { status: Number(m[1]), headers };
}
