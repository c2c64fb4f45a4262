/**
 * Where a request goes ({@link Endpoint}) and what it is written from ({@link Part}s: non-secret text, or
 * credential bytes borrowed for the write): the endpoint of a URL that holds no credential, the endpoint of a
 * credential URL given as bytes (its target written into a buffer the caller zeroes), and the check that a
 * request's text parts are sendable.
 *
 * @module
 */
import { ByteBuffer } from "../../auth/credential_bytes.ts";
import { splitUrl, urlHost, writeTarget } from "../../auth/credential_url.ts";
import { WireError } from "./failure.ts";

/**
 * A piece of a request: non-secret ASCII text, or bytes — borrowed from a credential holder, copied into
 * the request buffer and never kept.
 */
export type Part = string | Uint8Array;

/** Where a request goes. The host and port are text (they are where the client connects). */
export interface Endpoint {
  /** TLS (`wss:`, `https:`) or plain TCP (`ws:`, `http:`; loopback engines in tests). */
  secure: boolean;
  /** The host to connect to (a name or an IP address; IPv6 without brackets). */
  hostname: string;
  port: number;
  /** The `Host` header (`url.host`). */
  host: string;
  /** The request target (path and query), its byte parts written as they are (already URL-encoded). */
  target: Part[];
}

/** One request header: a name (text) and its value's parts (bytes are UTF-8, sent as Latin-1 bytes). */
export interface HeaderLine {
  name: string;
  value: Part[];
}

/** The endpoint of a URL that holds no credential (a configured vendor URL, a public agent's URL). */
export function endpointOf(url: string): Endpoint {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new WireError({ kind: "invalid" });
  }
  const secure = u.protocol === "wss:" || u.protocol === "https:";
  if (!secure && u.protocol !== "ws:" && u.protocol !== "http:") throw new WireError({ kind: "invalid" });
  return {
    secure,
    hostname: u.hostname.replace(/^\[(.*)\]$/, "$1"),
    port: u.port ? Number(u.port) : secure ? 443 : 80,
    host: u.host,
    target: [u.pathname + u.search],
  };
}

/**
 * The endpoint of a `wss://` URL given as bytes (a credential: an engine's URL, a signed URL). The request
 * target is written into a buffer the caller owns: `zero()` it once the request is sent. Throws a
 * {@link WireError} (`invalid`) when the URL does not parse.
 */
export function endpointOfBytes(bytes: Uint8Array): { endpoint: Endpoint; zero(): void } {
  const split = splitUrl(bytes, "wss");
  const host = split && urlHost(bytes, split);
  if (!split || !host) throw new WireError({ kind: "invalid" });
  const target = new ByteBuffer(256);
  writeTarget(bytes, split, target);
  return {
    endpoint: {
      secure: true,
      hostname: host.hostname.replace(/^\[(.*)\]$/, "$1"),
      port: host.port,
      host: host.host,
      target: [target.view()],
    },
    zero: () => target.zero(),
  };
}

/** Whether any part of a URL target or header holds a character no HTTP/1.1 request line may carry. */
export function plainText(parts: Part[]): boolean {
  return parts.every((p) => {
    if (typeof p !== "string") return true;
    for (let i = 0; i < p.length; i++) {
      const c = p.charCodeAt(i);
      if (c <= 0x20 || c >= 0x7f) return false;
    }
    return true;
  });
}
