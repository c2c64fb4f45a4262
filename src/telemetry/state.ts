/**
 * Whether Deno's built-in OpenTelemetry is on in this process, probed once through the public
 * `@opentelemetry/api`: Deno registers its tracer and meter providers with that package when tracing
 * (`OTEL_DENO=true`, or `OTEL_DENO_TRACING`) or metrics (`OTEL_DENO_METRICS`) are enabled, before any user
 * code runs; otherwise the package answers with its no-op providers. Everything in `src/telemetry/` checks
 * this first and does nothing when it is off: no instrument is created, no span, no context change, so
 * telemetry off costs one boolean test at each recording site.
 *
 * @module
 */
import { createNoopMeter, metrics, ProxyTracerProvider, trace } from "@opentelemetry/api";

/** What is on. */
export interface TelemetryState {
  /** Spans are recorded and exported (Deno's `Deno.serve`/`fetch` spans, and this service's). */
  tracing: boolean;
  /** Metrics are exported (this service's instruments; Deno's own HTTP metrics). */
  metrics: boolean;
}

let state: TelemetryState | null = null;

/** What is on in this process (probed on first use; it cannot change while the process runs). */
export function telemetry(): TelemetryState {
  state ??= {
    tracing: !(trace.getTracerProvider() instanceof ProxyTracerProvider),
    metrics: metrics.getMeter("probe").constructor !== createNoopMeter().constructor,
  };
  return state;
}
