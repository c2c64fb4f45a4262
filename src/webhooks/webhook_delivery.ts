/**
 * Webhook delivery (a background loop of every process that runs sessions): polls the outbox's due index, claims due events with a lease, signs and
 * POSTs them, and records each outcome (see `src/kv/webhook_outbox.ts`). Any number of processes may run
 * one on the same KV: claims are compare-and-set, and an event whose claimant dies is due again when the
 * lease runs out. No KV queues are used (they do not exist on Deno Deploy or over KV Connect).
 *
 * Per attempt: the destination is checked (https, no blocked address after resolving, URL not gone),
 * redirects are not followed (a 3xx is a failure), and the request is aborted after the attempt timeout.
 * 2xx = delivered; 410 = the URL is gone (this and later events to it are dropped); anything else is retried
 * on the schedule (`Retry-After` of a 429/503 honoured) and given up (`failed`) once it is exhausted.
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import { getOrCreateWebhookSecret, signingSecrets } from "../kv/webhook_secrets.ts";
import {
  type AttemptOutcome,
  type ClaimedEvent,
  claimEvent,
  dropForGoneUrl,
  type DueEntry,
  goneUrl,
  listDueEvents,
  recordAttempt,
} from "../kv/webhook_outbox.ts";
import type { Logger } from "../log.ts";
import { nextAttemptAt } from "./schedule.ts";
import { generateWebhookSecret, webhookHeaders } from "./sign.ts";
import { checkWebhookUrl, dnsResolver, type Resolver, WebhookUrlError } from "./url_guard.ts";
import { ATTR, SPAN } from "../telemetry/names.ts";
import { recordWebhookAttempt } from "../telemetry/metrics.ts";
import { inSpan, markFailed, serverOf, SpanKind, untraced } from "../telemetry/tracing.ts";

/** `User-Agent` of deliveries. */
export const WEBHOOK_USER_AGENT = "avatar-session-service-webhooks/1";

/** Delivery settings (from the configuration). */
export interface WebhookSettings {
  /** Per-attempt timeout, ms. */
  timeoutMs: number;
  /** Delays after each failed attempt, ms. */
  retrySchedule: readonly number[];
  /** Allow loopback/private/link-local destinations. */
  allowPrivate: boolean;
  /** How often the due index is polled, ms. */
  pollMs: number;
  /** Attempts in flight at once per process. */
  concurrency: number;
}

/** Dependencies of the delivery loop. */
export interface WebhookDeliveryDeps {
  kv: Deno.Kv;
  clock: Clock;
  logger: Logger;
  /** This process's id (recorded as the claimant). */
  instanceId: string;
  settings: WebhookSettings;
  /** HTTP client for deliveries (e.g. one trusting a private CA). */
  httpClient?: Deno.HttpClient;
  /** fetch implementation (tests may observe calls). */
  fetch?: typeof fetch;
  /** Host name resolver for the destination check. */
  resolve?: Resolver;
  /** Jitter source in [0, 1). */
  random?: () => number;
}

/** What one attempt came to, before the retry schedule is applied. */
type SendResult =
  | Extract<AttemptOutcome, { kind: "delivered" } | { kind: "give_up" }>
  | { kind: "failed"; status: number | null; error: string; retryAfterMs: number | null };

/** Abort reason of attempts cut by {@link WebhookDelivery.stop}. */
const STOPPED = new DOMException("the webhook worker stopped", "AbortError");

/** How long a claim lasts beyond the attempt timeout (DNS, signing, recording). */
const CLAIM_MARGIN_MS = 30_000;
/** Longest pause between polls while storage is unavailable (the pause doubles from the poll period). */
const MAX_POLL_BACKOFF_MS = 30_000;

async function sha256Hex(s: string): Promise<string> {
  const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s));
  return Array.from(new Uint8Array(d), (b) => b.toString(16).padStart(2, "0")).join("");
}

function retryAfterMs(res: Response, now: number): number | null {
  if (res.status !== 429 && res.status !== 503) return null;
  const v = res.headers.get("retry-after");
  if (!v) return null;
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/** Delivers webhook events from the outbox. */
export class WebhookDelivery {
  readonly #deps: WebhookDeliveryDeps;
  readonly #resolve: Resolver;
  readonly #fetch: typeof fetch;
  readonly #random: () => number;
  readonly #inflight = new Set<AbortController>();
  #stop: AbortController | null = null;
  #loop: Promise<void> | null = null;
  #finishing = false;

  constructor(deps: WebhookDeliveryDeps) {
    this.#deps = deps;
    this.#resolve = deps.resolve ?? dnsResolver();
    this.#fetch = deps.fetch ?? fetch;
    this.#random = deps.random ?? Math.random;
  }

  /** How long a claim lasts, ms. */
  get leaseMs(): number {
    return this.#deps.settings.timeoutMs + CLAIM_MARGIN_MS;
  }

  /**
   * Starts polling (idempotent). Attempts run as a pool of at most `concurrency`: a slow receiver holds one
   * slot for up to the attempt timeout and never keeps other due events waiting for a whole batch.
   */
  start(): void {
    if (this.#loop) return;
    const stop = new AbortController();
    this.#stop = stop;
    const active = new Set<Promise<void>>();
    let wake: (() => void) | null = null;
    const idle = (ms: number) =>
      new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(t);
          stop.signal.removeEventListener("abort", done);
          wake = null;
          resolve();
        };
        const t = setTimeout(done, ms);
        wake = done;
        stop.signal.addEventListener("abort", done, { once: true });
      });
    this.#loop = (async () => {
      // Consecutive failed polls (storage unavailable): the loop backs off and says so once.
      let failures = 0;
      while (!stop.signal.aborted) {
        const free = this.#deps.settings.concurrency - active.size;
        let started = 0;
        if (free > 0) {
          try {
            const due = await listDueEvents(this.#deps.kv, this.#deps.clock.now(), free);
            for (const d of due) {
              if (stop.signal.aborted) break;
              const p: Promise<void> = this.#claimAndAttempt(d).then(() => {}).finally(() => {
                active.delete(p);
                wake?.();
              });
              active.add(p);
              started++;
            }
            if (failures > 0) this.#deps.logger.info("webhook worker: storage available again", { failures });
            failures = 0;
          } catch (err) {
            if (failures === 0) {
              this.#deps.logger.warn("webhook worker: poll failed; backing off while it fails", {
                error: String(err).slice(0, 200),
              });
            }
            failures++;
          }
        }
        // Full pool or nothing due: wait for a slot to free up or the next poll (longer while polls fail).
        if (failures > 0) {
          await idle(Math.min(MAX_POLL_BACKOFF_MS, this.#deps.settings.pollMs * 2 ** Math.min(failures, 10)));
        } else if (started === 0 || active.size >= this.#deps.settings.concurrency) {
          await idle(this.#deps.settings.pollMs);
        }
      }
      await Promise.all(active);
    })();
  }

  /**
   * Stops polling. By default attempts in flight are aborted without being recorded: their claims run out
   * and the events are delivered later by whichever worker finds them due (as after a crash). With
   * `finishInflight` they are let finish (each within the attempt timeout) and recorded.
   */
  async stop(options: { finishInflight?: boolean } = {}): Promise<void> {
    this.#finishing = options.finishInflight === true;
    this.#stop?.abort();
    if (!this.#finishing) { for (const c of this.#inflight) c.abort(STOPPED); }
    await this.#loop;
    this.#loop = null;
    this.#finishing = false;
  }

  /**
   * Attempts every event due now, in rounds, until none is due or `deadline` (ms on the injected clock) passes.
   * Attempts are cut short at the deadline. Used at shutdown.
   */
  async drain(deadline: number): Promise<void> {
    for (let round = 0; round < 10_000 && this.#deps.clock.now() < deadline; round++) {
      const due = await listDueEvents(this.#deps.kv, this.#deps.clock.now(), 1);
      if (due.length === 0) return;
      await this.tick(deadline);
    }
  }

  #batch(): number {
    return this.#deps.settings.concurrency * 4;
  }

  /** One round: claims up to a batch of due events and attempts them. Returns how many were attempted. */
  async tick(deadline?: number): Promise<number> {
    const { kv, clock } = this.#deps;
    const due = await listDueEvents(kv, clock.now(), this.#batch());
    let attempted = 0;
    let next = 0;
    const lane = async () => {
      while (next < due.length) {
        const d = due[next++];
        if (this.#stop?.signal.aborted && deadline === undefined && !this.#finishing) return;
        if (await this.#claimAndAttempt(d, deadline)) attempted++;
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.#deps.settings.concurrency, due.length) }, lane));
    return attempted;
  }

  /** Claims one due event and attempts it; false when another worker claimed it first. Never throws. */
  async #claimAndAttempt(d: DueEntry, deadline?: number): Promise<boolean> {
    const { kv, clock, instanceId } = this.#deps;
    try {
      const claim = await claimEvent(kv, d, instanceId, clock.now(), this.leaseMs);
      if (!claim) return false;
      await this.#attempt(claim, deadline);
      return true;
    } catch (err) {
      this.#deps.logger.warn("webhook worker: attempt not recorded", {
        event_id: d.eventId,
        error: String(err).slice(0, 200),
      });
      return true;
    }
  }

  async #attempt(claim: ClaimedEvent, deadline?: number): Promise<void> {
    const { kv, clock, logger, settings } = this.#deps;
    const rec = claim.record;
    const urlHash = await sha256Hex(rec.url);
    if (await goneUrl(kv, rec.project_id, urlHash, clock.now())) {
      await dropForGoneUrl(kv, claim, clock.now());
      logger.info("webhook dropped: its URL answered 410 Gone earlier", { event_id: rec.event_id });
      return;
    }
    const attemptNo = rec.attempts + 1;
    const result = await this.#send(claim, deadline);
    if (result === null) return;
    const now = clock.now();
    let outcome: AttemptOutcome;
    if (result.kind === "failed") {
      const at = nextAttemptAt(settings.retrySchedule, attemptNo, now, this.#random, result.retryAfterMs);
      outcome = at === null
        ? { kind: "give_up", state: "failed", status: result.status, error: result.error }
        : { kind: "retry", at, status: result.status, error: result.error };
    } else outcome = result;
    const recorded = await recordAttempt(kv, claim, outcome, now, urlHash);
    recordWebhookAttempt(
      outcome.kind === "give_up" ? outcome.state : outcome.kind,
      "status" in outcome ? outcome.status : null,
      rec.type,
      outcome.kind === "delivered" ? (now - rec.created_at) / 1000 : null,
    );
    const fields = {
      event_id: rec.event_id,
      session_id: rec.session_id,
      type: rec.type,
      attempt: attemptNo,
      outcome: outcome.kind,
      status: "status" in outcome ? outcome.status : null,
      ...(outcome.kind === "retry" || outcome.kind === "give_up" ? { error: outcome.error } : {}),
      ...(recorded ? {} : { note: "claim lost; outcome dropped" }),
    };
    if (outcome.kind === "delivered") logger.info("webhook delivered", fields);
    else logger.warn("webhook attempt failed", fields);
  }

  /** Checks the destination and POSTs the event; null when the worker is stopping (nothing to record). */
  async #send(claim: ClaimedEvent, deadline?: number): Promise<SendResult | null> {
    const failure = (
      status: number | null,
      error: string,
      retryAfterMs: number | null = null,
    ): SendResult => ({
      kind: "failed",
      status,
      error,
      retryAfterMs,
    });
    const { kv, clock, settings } = this.#deps;
    const rec = claim.record;
    try {
      await checkWebhookUrl(rec.url, settings.allowPrivate, this.#resolve);
    } catch (err) {
      if (!(err instanceof WebhookUrlError)) throw err;
      return err.transient
        ? failure(null, err.message)
        : { kind: "give_up", state: "refused", status: null, error: err.message };
    }
    const secret = await getOrCreateWebhookSecret(kv, rec.project_id, clock.now(), generateWebhookSecret);
    const nowMs = clock.now();
    const headers = await webhookHeaders(
      signingSecrets(secret, nowMs),
      rec.event_id,
      Math.floor(nowMs / 1000),
      rec.body,
    );
    const ctl = new AbortController();
    this.#inflight.add(ctl);
    // stop() may have run while this attempt was preparing: it was not in flight then, so cut it here.
    if (this.#stop?.signal.aborted && !this.#finishing && deadline === undefined) {
      this.#inflight.delete(ctl);
      return null;
    }
    const budget = deadline === undefined
      ? settings.timeoutMs
      : Math.max(1, Math.min(settings.timeoutMs, deadline - this.#deps.clock.now()));
    const timer = setTimeout(() => ctl.abort(new DOMException("timeout", "TimeoutError")), budget);
    try {
      // The URL is the customer's (its path or query may hold their secret): Deno's fetch span of it is left
      // unsampled; this span records the destination's host and port only.
      const res = await inSpan(SPAN.webhookDeliver, {
        kind: SpanKind.CLIENT,
        attributes: {
          [ATTR.httpMethod]: "POST",
          ...serverOf(rec.url),
          [ATTR.webhookEventType]: rec.type,
          [ATTR.sessionId]: rec.session_id,
          [ATTR.projectId]: rec.project_id,
        },
      }, async (span) => {
        const res = await untraced(() =>
          this.#fetch(rec.url, {
            method: "POST",
            headers: { ...headers, "user-agent": WEBHOOK_USER_AGENT },
            body: rec.body,
            redirect: "manual",
            signal: ctl.signal,
            ...(this.#deps.httpClient ? { client: this.#deps.httpClient } : {}),
          } as RequestInit)
        );
        span?.setAttribute(ATTR.httpStatus, res.status);
        if (res.status >= 300) markFailed(span, String(res.status));
        return res;
      });
      await res.body?.cancel().catch(() => {});
      if (res.status >= 200 && res.status < 300) return { kind: "delivered", status: res.status };
      if (res.status === 410) {
        return { kind: "give_up", state: "gone", status: 410, error: "the receiver answered 410 Gone" };
      }
      const what = res.status >= 300 && res.status < 400
        ? `redirect ${res.status} (not followed)`
        : `HTTP ${res.status}`;
      return failure(res.status, what, retryAfterMs(res, clock.now()));
    } catch {
      // Stopping: leave the claim to run out; whoever finds the event due next delivers it.
      if (ctl.signal.reason === STOPPED) return null;
      return failure(null, ctl.signal.aborted ? `timeout after ${budget} ms` : "connection failed");
    } finally {
      clearTimeout(timer);
      this.#inflight.delete(ctl);
    }
  }
}
