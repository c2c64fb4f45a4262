/**
 * The service's metrics, recorded through `npm:@opentelemetry/api` on the meter provider Deno registers
 * when its OpenTelemetry is on (`OTEL_DENO=true`), and exported by Deno over OTLP. Names and attributes are
 * in `names.ts`; where each is recorded is said on each function.
 *
 * Metrics off, the instruments are never created and every `record…` function returns after one boolean
 * test. Attributes are low-cardinality by construction (codes, reasons, types, worker ids: never a session
 * id, a project id or a URL).
 *
 * @module
 */
import { type Attributes, type Histogram, metrics, type ObservableResult } from "@opentelemetry/api";
import type { SessionRecord } from "../vocabulary/session_record.ts";
import { ATTR, METRIC, SCOPE } from "./names.ts";
import { telemetry } from "./state.ts";

/** Bucket boundaries (seconds) of the histograms, after what each measures. */
const BUCKETS = {
  start: [0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 8, 13, 20, 30],
  session: [10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14_400, 86_400],
  lag: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600, 7200, 36_000, 86_400, 259_200],
  latency: [0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5],
  // signed; ±45 ms and ±125 ms are where viewers notice sound early / late (ITU-R BT.1359)
  offset: [-0.5, -0.2, -0.125, -0.08, -0.045, -0.02, -0.01, 0, 0.01, 0.02, 0.045, 0.08, 0.125, 0.2, 0.5],
  firstFrame: [0.05, 0.1, 0.15, 0.25, 0.5, 1, 2, 5],
};

function createInstruments() {
  const meter = metrics.getMeter(SCOPE);
  const histogram = (name: string, description: string, buckets: number[]) =>
    meter.createHistogram(name, { description, unit: "s", advice: { explicitBucketBoundaries: buckets } });
  return {
    creates: meter.createCounter(METRIC.creates, {
      description: "POST /v1/sessions answers, by HTTP status and error code",
      unit: "{session}",
    }),
    startDuration: histogram(METRIC.startDuration, "Create request to session active", BUCKETS.start),
    ends: meter.createCounter(METRIC.ends, {
      description: "Sessions that reached a terminal status, by end reason",
      unit: "{session}",
    }),
    sessionDuration: histogram(
      METRIC.sessionDuration,
      "Session active time (started_at to ended_at)",
      BUCKETS.session,
    ),
    webhookDeliveries: meter.createCounter(METRIC.webhookDeliveries, {
      description: "Webhook delivery attempts, by outcome",
      unit: "{attempt}",
    }),
    webhookLag: histogram(METRIC.webhookLag, "Lifecycle event written to delivered (2xx)", BUCKETS.lag),
    engineConnectFailures: meter.createCounter(METRIC.engineConnectFailures, {
      description: "Engine connections that failed to open or complete the handshake, by kind",
      unit: "{failure}",
    }),
    engineConnectDuration: histogram(
      METRIC.engineConnectDuration,
      "Engine connect and handshake",
      BUCKETS.start,
    ),
    rateLimitRefusals: meter.createCounter(METRIC.rateLimitRefusals, {
      description: "Requests refused by the rate limits (429)",
      unit: "{request}",
    }),
    turnLatency: histogram(METRIC.turnLatency, "Per-session turn latency (p50 and p95)", BUCKETS.latency),
    avatarLatency: histogram(
      METRIC.avatarLatency,
      "Per-session avatar latency (p50 and p95)",
      BUCKETS.latency,
    ),
    avOffset: histogram(
      METRIC.avOffset,
      "Per-session audio/video offset (p50 and p95), signed",
      BUCKETS.offset,
    ),
    firstFrame: histogram(METRIC.firstFrame, "Client connect to first frame presented", BUCKETS.firstFrame),
    sessionsActive: meter.createObservableUpDownCounter(METRIC.sessionsActive, {
      description: "Sessions running on a worker now",
      unit: "{session}",
    }),
    workerCapacity: meter.createObservableUpDownCounter(METRIC.workerCapacity, {
      description: "Sessions a worker takes at once",
      unit: "{session}",
    }),
    workerFreeSlots: meter.createObservableUpDownCounter(METRIC.workerFreeSlots, {
      description: "Free session slots of a worker",
      unit: "{session}",
    }),
  };
}

type Instruments = ReturnType<typeof createInstruments>;
let created: Instruments | null = null;

/** The instruments, created on first use when metrics are on; null when they are off. */
export function instruments(): Instruments | null {
  if (!telemetry().metrics) return null;
  return created ??= createInstruments();
}

/**
 * One `POST /v1/sessions` answer (API processes; every answer, refusals before the service included):
 * `http.response.status_code`, `error.type` (the error code, on failures), `avatar.provider.type` when the
 * body named a valid one.
 */
export function recordCreate(
  status: number,
  errorCode: string | undefined,
  providerType: string | undefined,
): void {
  const m = instruments();
  if (!m) return;
  const attrs: Attributes = { [ATTR.httpStatus]: status };
  if (errorCode) attrs[ATTR.errorType] = errorCode;
  if (providerType) attrs[ATTR.providerType] = providerType;
  m.creates.add(1, attrs);
}

/** A create that answered `active` after `seconds` (API processes). */
export function recordStartDuration(seconds: number, providerType: string, transport: string): void {
  instruments()?.startDuration.record(seconds, {
    [ATTR.providerType]: providerType,
    [ATTR.transport]: transport,
  });
}

/**
 * A session's transition into a terminal status, recorded once by whichever process wrote it (API, worker,
 * reaper, end journal: the compare-and-set lets exactly one write it).
 */
export function recordEnd(next: SessionRecord): void {
  const m = instruments();
  if (!m) return;
  const attrs: Attributes = {
    [ATTR.endReason]: next.end_reason ?? "unknown",
    [ATTR.status]: next.status,
    [ATTR.providerType]: next.provider_type,
    [ATTR.transport]: next.transport,
  };
  m.ends.add(1, attrs);
  if (next.started_at !== null && next.ended_at !== null) {
    m.sessionDuration.record(Math.max(0, (next.ended_at - next.started_at) / 1000), attrs);
  }
}

/**
 * One webhook delivery attempt (workers): `avatar.webhook.outcome` (`delivered`, `retry`, `failed`, `gone`,
 * `refused`), `http.response.status_code` when an answer came; `lagS` (event written → now) for delivered
 * ones.
 */
export function recordWebhookAttempt(
  outcome: string,
  status: number | null,
  eventType: string,
  lagS: number | null,
): void {
  const m = instruments();
  if (!m) return;
  const attrs: Attributes = { [ATTR.webhookOutcome]: outcome, [ATTR.webhookEventType]: eventType };
  if (status !== null) attrs[ATTR.httpStatus] = status;
  m.webhookDeliveries.add(1, attrs);
  if (lagS !== null) m.webhookLag.record(Math.max(0, lagS), { [ATTR.webhookEventType]: eventType });
}

/**
 * An engine connection attempt (workers): its duration, and for a failure its kind as `error.type` (the
 * mapped error code: `SVC_PROVIDER_UNAVAILABLE` unreachable or down, `SVC_PROVIDER_MISCONFIGURED` refused
 * credentials, `SVC_RATE_LIMIT_PROVIDER_QUOTA` quota, `SVC_PROVIDER_TIMEOUT`, `SVC_PROVIDER_DOWNSTREAM_FAILED`
 * a protocol or handshake failure, …).
 */
export function recordEngineConnect(providerType: string, seconds: number, errorCode: string | null): void {
  const m = instruments();
  if (!m) return;
  const attrs: Attributes = { [ATTR.providerType]: providerType };
  if (errorCode) attrs[ATTR.errorType] = errorCode;
  m.engineConnectDuration.record(seconds, attrs);
  if (errorCode) m.engineConnectFailures.add(1, attrs);
}

/** A request refused with 429 by the request-rate or the concurrent-sessions limit (API processes). */
export function recordRateLimitRefusal(errorCode: string, route: string): void {
  instruments()?.rateLimitRefusals.add(1, { [ATTR.errorType]: errorCode, [ATTR.httpRoute]: route });
}

/** What a worker reports about itself at each collection. */
export interface WorkerGauges {
  workerId: string;
  capacity(): number;
  freeSlots(): number;
  /** The provider type and transport of each session running here now. */
  live(): Iterable<{ providerType: string; transport: string }>;
}

/**
 * Observes a worker's sessions, capacity and free slots at each collection (nothing is recorded between
 * collections). Returns the function that stops observing.
 */
export function observeWorker(worker: WorkerGauges): () => void {
  const m = instruments();
  if (!m) return () => {};
  const id = { [ATTR.workerId]: worker.workerId };
  // Kinds seen once are reported at 0 afterwards, so a series goes to 0 instead of vanishing.
  const counts = new Map<string, { providerType: string; transport: string; n: number }>();
  const active = (r: ObservableResult) => {
    for (const c of counts.values()) c.n = 0;
    for (const s of worker.live()) {
      const k = `${s.providerType}\n${s.transport}`;
      const c = counts.get(k) ?? { providerType: s.providerType, transport: s.transport, n: 0 };
      c.n++;
      counts.set(k, c);
    }
    for (const c of counts.values()) {
      r.observe(c.n, { ...id, [ATTR.providerType]: c.providerType, [ATTR.transport]: c.transport });
    }
  };
  const capacity = (r: ObservableResult) => r.observe(worker.capacity(), id);
  const free = (r: ObservableResult) => r.observe(worker.freeSlots(), id);
  m.sessionsActive.addCallback(active);
  m.workerCapacity.addCallback(capacity);
  m.workerFreeSlots.addCallback(free);
  return () => {
    m.sessionsActive.removeCallback(active);
    m.workerCapacity.removeCallback(capacity);
    m.workerFreeSlots.removeCallback(free);
  };
}

/** Records one value in seconds from milliseconds, when it is a number. */
export function recordMs(h: Histogram, ms: number | null | undefined, attrs: Attributes): void {
  if (typeof ms === "number" && Number.isFinite(ms)) h.record(ms / 1000, attrs);
}
