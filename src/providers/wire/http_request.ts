/**
 * One plain HTTP/1.1 request whose headers may carry credential bytes — vendor3's signed-URL mint is its one
 * user — over the same byte socket, TLS, request assembly and abort rules as the WebSocket upgrade
 * (`dial.ts`, `http1.ts`), with its answer's body read into a buffer the caller zeroes (`Content-Length` or
 * chunked, bounded). No redirect is followed.
 *
 * @module
 */
import { ByteBuffer } from "../../auth/credential_bytes.ts";
import { Dialer } from "./dial.ts";
import { type Endpoint, type HeaderLine, plainText } from "./endpoint.ts";
import { WireError } from "./failure.ts";
import { readHead, writeHead } from "./http1.ts";

/** A response read by {@link httpRequest}: the body in a buffer the caller zeroes. */
export interface HttpAnswer {
  status: number;
  headers: Map<string, string>;
  /** The body (dechunked). Zero it once read. */
  body: ByteBuffer;
}

/**
 * One HTTP/1.1 request (`Connection: close`) whose headers may carry credential bytes, with the same
 * connecting, TLS and abort rules as the WebSocket client; no redirect is followed. Reads a body of at most
 * `maxBody` bytes (`protocol` beyond). Throws {@link WireError}s, or the signal's reason once aborted.
 */
export async function httpRequest(o: {
  method: string;
  endpoint: Endpoint;
  headers: HeaderLine[];
  signal: AbortSignal;
  caCerts?: readonly string[];
  maxBody: number;
}): Promise<HttpAnswer> {
  if (!plainText(o.endpoint.target) || !plainText([o.endpoint.host])) {
    throw new WireError({ kind: "invalid" });
  }
  const request = new ByteBuffer(512);
  writeHead(request, o.method, o.endpoint, [...o.headers, { name: "Connection", value: ["close"] }]);
  const dialer = new Dialer(o.signal);
  const body = new ByteBuffer(1024);
  let raw: ByteBuffer | null = null;
  try {
    const conn = await dialer.send(o.endpoint, o.caCerts ?? [], request);
    // The abort signal keeps dropping the connection while the answer is read.
    const onAbort = () => dialer.drop();
    o.signal.addEventListener("abort", onAbort, { once: true });
    try {
      const head = await readHead(conn);
      raw = new ByteBuffer(1024);
      raw.bytes(head.rest);
      head.rest.fill(0);
      const length = head.headers.get("content-length");
      const chunked = /\bchunked\b/i.test(head.headers.get("transfer-encoding") ?? "");
      const want = !chunked && length !== undefined && /^\d+$/.test(length) ? Number(length) : null;
      if (want !== null && want > o.maxBody) throw new WireError({ kind: "protocol" });
      const buf = new Uint8Array(16 * 1024);
      try {
        for (;;) {
          if (want !== null && raw.length >= want) break;
          if (chunked && dechunk(raw.view(), body, o.maxBody) !== null) break;
          if (raw.length > o.maxBody + 64 * 1024) throw new WireError({ kind: "protocol" });
          let n: number | null;
          try {
            n = await conn.read(buf);
          } catch {
            n = null;
            if (o.signal.aborted) throw o.signal.reason;
          }
          if (n === null) break;
          raw.bytes(buf.subarray(0, n));
        }
      } finally {
        buf.fill(0);
      }
      if (chunked) {
        body.zero();
        if (dechunk(raw.view(), body, o.maxBody) === null) throw new WireError({ kind: "protocol" });
      } else {
        const v = raw.view();
        if (want !== null && v.length < want) throw new WireError({ kind: "protocol" });
        const n = want ?? v.length;
        if (n > o.maxBody) throw new WireError({ kind: "protocol" });
        body.bytes(v.subarray(0, n));
      }
      return { status: head.status, headers: head.headers, body };
    } finally {
      o.signal.removeEventListener("abort", onAbort);
    }
  } catch (err) {
    body.zero();
    if (dialer.aborted || o.signal.aborted) throw o.signal.reason;
    throw err;
  } finally {
    request.zero();
    raw?.zero();
    dialer.drop();
    dialer.done();
  }
}

/**
 * Decodes a complete chunked body from `raw` into `into` (bytes written: their count), or null when it is
 * not complete yet (or larger than `max`).
 */
function dechunk(raw: Uint8Array, into: ByteBuffer, max: number): number | null {
  into.zero();
  let i = 0;
  for (;;) {
    let eol = -1;
    for (let j = i; j + 1 < raw.length; j++) {
      if (raw[j] === 0x0d && raw[j + 1] === 0x0a) {
        eol = j;
        break;
      }
    }
    if (eol < 0) return null;
    let size = 0;
    let k = i;
    for (; k < eol; k++) {
      const c = raw[k];
      const v = c >= 0x30 && c <= 0x39
        ? c - 0x30
        : (c | 0x20) >= 0x61 && (c | 0x20) <= 0x66
        ? (c | 0x20) - 0x57
        : -1;
      if (v < 0) break;
      size = size * 16 + v;
      if (size > max) return null;
    }
    if (k === i) return null;
    const start = eol + 2;
    if (size === 0) return into.length;
    if (raw.length < start + size + 2) return null;
    into.bytes(raw.subarray(start, start + size));
    if (into.length > max) return null;
    i = start + size + 2;
  }
}
