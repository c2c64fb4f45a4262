/**
 * The body of a route that takes provider credentials (`POST /v1/sessions`), read so that no credential
 * becomes a JavaScript string: the body stream is read chunk by chunk into a buffer the route owns (each
 * chunk zeroed once copied), its credential fields are read as bytes (`readCredentials` of
 * `src/providers/definitions/credential_reader.ts`), and the route's validators get a copy of the body in which those
 * values are stand-ins. The credentials read are exposed as `c.get("credentials")` and zeroed when the
 * request is done, whatever its answer (the route moves them into a holder first when it accepts them).
 *
 * @module
 */
import type { MiddlewareHandler } from "hono";
import { readCredentials } from "../../providers/definitions/credential_reader.ts";
import { ByteBuffer } from "../../auth/credential_bytes.ts";
import type { AppEnv } from "../app_env.ts";

/** Reads a request body into an owned buffer, zeroing each chunk the stream gave once it is copied. */
export async function readOwned(body: ReadableStream<Uint8Array> | null): Promise<ByteBuffer> {
  const out = new ByteBuffer(4096);
  if (!body) return out;
  const reader = body.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      out.bytes(value);
      value.fill(0);
    }
  } catch (err) {
    out.zero();
    throw err;
  } finally {
    reader.releaseLock();
  }
  return out;
}

/** The middleware (place it before the route's validators). */
export function credentialBody(): MiddlewareHandler<AppEnv> {
  return async function credentialBody(c, next) {
    const raw = c.req.raw;
    const owned = await readOwned(raw.body);
    const read = readCredentials(owned.view());
    owned.zero();
    c.req.raw = new Request(raw.url, { method: raw.method, headers: raw.headers, body: read.blanked });
    c.set("credentials", read);
    try {
      await next();
    } finally {
      read.zero();
    }
  };
}
