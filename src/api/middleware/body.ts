/**
 * Bounded request bodies, on every route: at most `maxBytes`, fully received within `timeoutMs` of the
 * request's arrival.
 *
 * A declared `Content-Length` over the limit is refused before anything is read. Otherwise the body is
 * handed on as a counting stream (never buffered here, so no extra copy of it exists): the first chunk past
 * the limit, or the deadline, fails the read, and the request answers `413 SVC_PAYLOAD_TOO_LARGE` or
 * `408 SVC_REQUEST_TIMEOUT` whatever the route made of the failed read. Nothing is read, and no timer runs,
 * when the route does not read the body.
 *
 * Deno's HTTP server (2.9) offers no header-read, body-read or keep-alive timeout and no way to close a
 * connection from a handler: a slow body no longer holds a handler or a buffer past the deadline, but the
 * TCP connection stays open until the client closes it. docs/configuration.md ("Connections") names the
 * reverse-proxy settings that bound connections.
 *
 * @module
 */
import type { MiddlewareHandler } from "hono";
import { ApiError } from "../../errors.ts";
import type { AppEnv } from "../app_env.ts";

/** Limits of {@link boundedBody}. */
export interface BodyLimits {
  /** Largest accepted body, bytes (or per request path). */
  maxBytes: number | ((path: string) => number);
  /** Deadline for receiving the whole body, from the request's arrival, ms. */
  timeoutMs: number;
}

const TIMED_OUT = Symbol("timed out");

/** Applies {@link BodyLimits} to the request body. */
export function boundedBody(limits: BodyLimits): MiddlewareHandler<AppEnv> {
  // Not async itself: a request without a body (most of them) passes through without a wait of its own.
  return function boundedBody(c, next) {
    const raw = c.req.raw;
    // A body declared empty passes as it is, checked before `raw.body`: Deno builds a ReadableStream for
    // the getter even then (~2.5 µs of a POST without a body, in the bench's profile).
    if (raw.method !== "GET" && raw.method !== "HEAD") {
      if (raw.headers.get("content-length") === "0" && !raw.headers.has("transfer-encoding")) return next();
    }
    // No body: let through as it is (wrapping its stream costs more than the request).
    if (!raw.body) return next();
    return bound(c, next, raw, raw.body);
  };

  async function bound(
    c: Parameters<MiddlewareHandler<AppEnv>>[0],
    next: Parameters<MiddlewareHandler<AppEnv>>[1],
    raw: Request,
    rawBody: ReadableStream<Uint8Array>,
  ): Promise<void> {
    const maxBytes = typeof limits.maxBytes === "number" ? limits.maxBytes : limits.maxBytes(c.req.path);
    const declared = raw.headers.get("content-length");
    if (declared !== null && !raw.headers.has("transfer-encoding") && Number(declared) > maxBytes) {
      throw new ApiError("SVC_PAYLOAD_TOO_LARGE");
    }

    const deadline = performance.now() + limits.timeoutMs;
    let failure: ApiError | null = null;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let timeout: Promise<typeof TIMED_OUT> | null = null;
    const stop = () => clearTimeout(timer);
    const source = rawBody.getReader();
    let received = 0;
    let settled = false;
    const release = () => {
      if (settled) return;
      settled = true;
      stop();
      source.cancel().catch(() => {});
    };
    const fail = (err: ApiError) => {
      failure ??= err;
      release();
      throw failure;
    };
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        timeout ??= new Promise((resolve) => {
          timer = setTimeout(() => resolve(TIMED_OUT), Math.max(0, deadline - performance.now()));
        });
        const chunk = await Promise.race([source.read(), timeout]);
        if (chunk === TIMED_OUT) {
          return fail(
            new ApiError(
              "SVC_REQUEST_TIMEOUT",
              `The request body did not arrive within ${limits.timeoutMs} ms.`,
            ),
          );
        }
        if (chunk.done) {
          const cancelled = settled;
          settled = true;
          stop();
          if (!cancelled) controller.close();
          return;
        }
        received += chunk.value.byteLength;
        if (received > maxBytes) return fail(new ApiError("SVC_PAYLOAD_TOO_LARGE"));
        controller.enqueue(chunk.value);
      },
      cancel() {
        release();
      },
    }, { highWaterMark: 0 });
    // Built from the URL, not from `raw`: copying `raw` would also follow its abort signal, which nothing
    // here uses and which Deno warns about (its legacy abort-on-success behaviour).
    c.req.raw = new Request(raw.url, {
      method: raw.method,
      headers: raw.headers,
      body,
      duplex: "half",
    } as RequestInit);
    try {
      await next();
    } finally {
      // A body the route did not read (or read in part) is let go, so its connection's resources are.
      release();
    }
    // The route may have turned the failed read into another answer (e.g. "not valid JSON").
    if (failure) throw failure;
  }
}
