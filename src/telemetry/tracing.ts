/**
 * The service's spans, on Deno's built-in tracer (`OTEL_DENO=true`), and the one rule that keeps
 * credentials out of Deno's own spans.
 *
 * **Deno's instrumentation records `url.full` and `url.query`** on every `fetch` span, every `node:http`
 * client span and every `Deno.serve` span. Some of this service's outgoing requests carry a credential or a
 * customer's data in their URL: a customer's `webhook_url` query; the engine connections (the vendor2
 * `access_token` query parameter, a vendor3 signed URL's `conversation_signature`) go through the bridges'
 * own client over raw connections, which Deno does not trace, and run unsampled as well. Deno offers
 * no switch to leave the query out (measured on 2.9.6: a second `setAttribute("url.full", …)` on its span
 * adds a second value rather than replacing the first). What it does honour is sampling: with a parent-based
 * sampler, a span whose parent is not sampled is not recorded. So {@link untraced} runs such a request
 * under an unsampled parent — Deno's span is then never recorded nor exported — and this service records
 * its own span around it ({@link inSpan}) with what an operator needs and nothing more: the provider type, or
 * the destination's host and port — never a path or a query, which may hold a secret (vendor signed URLs,
 * and webhook URLs of the Slack kind carry theirs in the path). A process that runs sessions refuses to start with tracing on and a
 * sampler that ignores the parent ({@link samplerHonoursParent}; `compose.ts`), so the rule cannot silently
 * fail.
 *
 * Off (no tracing), every function here calls through at once: no span, no context change.
 *
 * @module
 */
import { context, type Span, SpanKind, SpanStatusCode, trace, TraceFlags } from "@opentelemetry/api";
import { ApiError } from "../errors.ts";
import { ATTR, SCOPE } from "./names.ts";
import { telemetry } from "./state.ts";

export { SpanKind };
export type { Span };

/** Samplers (`OTEL_TRACES_SAMPLER`, as Deno 2.9 reads it) that follow an unsampled parent. */
const PARENT_HONOURING = [
  "always_off",
  "parentbased_always_on",
  "parentbased_always_off",
  "parentbased_traceidratio",
];

/** Whether the sampler named by `OTEL_TRACES_SAMPLER` (null: unset, Deno's default) honours the parent. */
export function samplerHonoursParent(name: string | null): boolean {
  return name !== null && PARENT_HONOURING.includes(name.trim().toLowerCase());
}

/** The error type of a failure: the service's code, or the error's class name. */
export function errorType(err: unknown): string {
  if (err instanceof ApiError) return err.code;
  return err instanceof Error ? err.name : "unknown";
}

/**
 * Runs `fn` in a new span `name`, child of the current one, ended when `fn` settles. A failure sets the
 * span's status to error with `error.type` (the service's error code, or the error's class: never its
 * message, which may quote a URL). Without tracing, calls `fn(null)`.
 */
export function inSpan<T>(
  name: string,
  options: { kind?: SpanKind; attributes?: Record<string, string | number | boolean | undefined> },
  fn: (span: Span | null) => Promise<T>,
): Promise<T> {
  // Not an async function: off, this is one call of `fn`, with no promise of its own.
  if (!telemetry().tracing) return fn(null);
  const attributes: Record<string, string | number | boolean> = {};
  for (const [k, v] of Object.entries(options.attributes ?? {})) if (v !== undefined) attributes[k] = v;
  return trace.getTracer(SCOPE).startActiveSpan(
    name,
    { kind: options.kind ?? SpanKind.INTERNAL, attributes },
    async (span) => {
      try {
        return await fn(span);
      } catch (err) {
        span.setAttribute(ATTR.errorType, errorType(err));
        span.setStatus({ code: SpanStatusCode.ERROR });
        throw err;
      } finally {
        span.end();
      }
    },
  );
}

/** Marks `span` failed with `error.type` (e.g. a webhook receiver's HTTP status); nothing for null. */
export function markFailed(span: Span | null, type: string): void {
  span?.setAttribute(ATTR.errorType, type);
  span?.setStatus({ code: SpanStatusCode.ERROR });
}

/** Sets attributes on the current span (one of {@link inSpan}'s); nothing without tracing. */
export function annotate(attributes: Record<string, string | number | boolean>): void {
  if (!telemetry().tracing) return;
  trace.getActiveSpan()?.setAttributes(attributes);
}

function randomHex(bytes: number): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, "0"))
    .join("");
}

/**
 * Runs `fn` under an unsampled parent: no span started inside it (Deno's `fetch`, `node:http` and
 * WebSocket spans included, and whatever continues from it: event handlers registered inside keep the
 * context) is recorded or exported. The parent is a random trace, so nothing of the current trace leaves
 * with the `traceparent` header Deno sends. Without tracing, calls `fn()`.
 */
export function untraced<T>(fn: () => T): T {
  if (!telemetry().tracing) return fn();
  const quiet = trace.wrapSpanContext({
    traceId: randomHex(16),
    spanId: randomHex(8),
    traceFlags: TraceFlags.NONE,
  });
  return context.with(trace.setSpan(context.active(), quiet), fn);
}

/** `server.address` and `server.port` of a URL (for a span's attributes). */
export function serverOf(raw: string): { "server.address"?: string; "server.port"?: number } {
  try {
    const url = new URL(raw);
    const port = url.port
      ? Number(url.port)
      : url.protocol === "https:" || url.protocol === "wss:"
      ? 443
      : 80;
    return { [ATTR.serverAddress]: url.hostname, [ATTR.serverPort]: port };
  } catch {
    return {};
  }
}
