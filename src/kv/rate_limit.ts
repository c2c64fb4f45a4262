/**
 * Per-API-key request rate limiting, enforced in memory on each API instance, with each key's budget
 * shared among the live API instances through KV. No KV access per request.
 *
 * **Policy.** Per API key, for the whole fleet: `perMinute` requests a minute sustained (R per second =
 * perMinute / 60) and bursts of `burst` (B) requests. `perMinute = 0` turns the limiter off.
 *
 * **Enforcement.** On each instance a key has a token bucket (equivalent to GCRA) holding at most
 * `max(1, B·s)` tokens and refilled at `R·s` per second, where `s` is this instance's share of the key's
 * budget. A request takes a token, or is refused with `retry_after` = seconds until the bucket holds one.
 *
 * **Shares.** Each instance counts the requests it receives per key (admitted and refused) and, every
 * `syncMs` (250 ms) while it serves requests, publishes its smoothed demand (requests/s) per key in
 * `["rate_demand", instance_id]` (one write; once a second while it sees no other instance), and reads the other instances' records and the live API
 * instances from the owner leases (two list reads), all in parallel and off the request path. A key's
 * rate R is then divided among the n live API instances by water-filling (max-min fairness) over their
 * demands, each counted as at least a floor of R/(20·n) so an instance that has not seen the key yet can
 * still admit some: if the demands sum to at most R, each instance gets its demand plus an equal part of
 * the rest; otherwise each gets min(demand, L), with L such that the parts sum to R. The shares of all
 * instances sum to 1, so the fleet admits R (plus the burst B once) however the load is balanced:
 * with even load each instance gets R/n; an instance receiving all of a key's traffic gets R·(1 − (n−1)/(20·n))
 * (≥ 95 %) of it within one or two sync periods.
 *
 * **Bounds** (see docs/api.md): a burst arriving at one instance after the key was idle fleet-wide gets
 * that instance's share of B (B/n with n instances); shares lag a shift of load by one or two sync periods
 * (0.25–0.5 s), during which the fleet admits less (never more, as the shares still sum to 1) than R;
 * instances read each other's demand a sync period apart, so shares may briefly sum to slightly more or
 * less than 1; an instance that restarts, or joins with a fresh view, starts its buckets full (up to its
 * share of B extra, once). The first request after an idle spell longer than `maxViewAgeMs` waits for one
 * sync. When KV is unreachable, the last view is kept (one instance, the whole budget, if there is none).
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import { kvOp } from "./guard.ts";
import { rateDemandKey, rateDemandPrefix } from "./keys.ts";
import { listLiveInstances, servesApi } from "./owner_leases.ts";
import { readHandleOf } from "./read_handle.ts";

/** Limiter settings (per API key, fleet-wide). */
export interface RateLimitPolicy {
  /** Sustained requests a minute; 0 turns the limiter off. */
  perMinute: number;
  /** Requests a key may make at once. */
  burst: number;
}

/** Outcome of one check. */
export interface RateLimitDecision {
  allowed: boolean;
  /**
   * Requests still admissible right now without waiting: this instance's tokens, scaled by its share to
   * the fleet-wide burst (exact with one instance; 0 when refused).
   */
  remaining: number;
  /** Seconds until one more request would be admitted here (≥ 1 when refused, 0 when admitted). */
  retryAfterS: number;
}

/** What an API instance publishes every sync period. */
export interface DemandRecord {
  instance_id: string;
  /** When it was written (clock ms). */
  at: number;
  /** Smoothed requests per second received, per API key id (the busiest keys only). */
  keys: Record<string, number>;
}

/** Keys published per instance at most (a record stays far below KV's 64 KiB value limit). */
const MAX_PUBLISHED_KEYS = 500;
/** Weight of the newest sync period in the smoothed demand. */
const ALPHA = 0.5;

/**
 * This instance's share (0..1) of a key's budget `rate`: water-filling over the demands of `n` instances
 * (this one's `own` demand, the `others` published, and 0 for live instances that published none), each
 * counted as at least `rate / (20·n)`.
 */
export function fairShare(own: number, others: readonly number[], n: number, rate: number): number {
  const count = Math.max(n, others.length + 1);
  if (count === 1) return 1;
  const floor = rate / (20 * count);
  const demands = [own, ...others];
  while (demands.length < count) demands.push(0);
  const d = demands.map((x) => Math.max(x, floor));
  const total = d.reduce((a, b) => a + b, 0);
  if (total <= rate) return (d[0] + (rate - total) / count) / rate;
  const sorted = [...d].sort((a, b) => a - b);
  let remaining = rate;
  let level = rate / count;
  for (let i = 0; i < count; i++) {
    level = remaining / (count - i);
    if (sorted[i] > level) break;
    remaining -= sorted[i];
  }
  return Math.min(d[0], level) / rate;
}

interface Bucket {
  tokens: number;
  /** Clock time of the last refill. */
  at: number;
  share: number;
  /** Requests since the last sync. */
  count: number;
  /** Smoothed requests per second. */
  demand: number;
  /** Syncs in a row without a request. */
  idle: number;
}

interface View {
  /** Live API instances, this one included. */
  n: number;
  /** Demands published by the other instances, per key. */
  others: Map<string, number[]>;
}

/** Dependencies and tuning of a {@link RateLimiter}. */
export interface RateLimiterDeps {
  kv: Deno.Kv;
  /** Time of the buckets and of the published records (tests move it). */
  clock: Clock;
  policy: RateLimitPolicy;
  /** This process's instance id (its owner lease and its demand record). */
  instanceId: string;
  /** Sync period, ms (default 250). */
  syncMs?: number;
  /** A request finding the last view older than this waits for a sync first (default 2,000 ms). */
  maxViewAgeMs?: number;
  /** Monotonic clock of the sync schedule, ms (default `performance.now`). */
  now?: () => number;
}

/** The per-key limiter of one API instance. */
export class RateLimiter {
  readonly #deps: RateLimiterDeps;
  readonly #syncMs: number;
  readonly #maxViewAgeMs: number;
  readonly #now: () => number;
  /** Requests per clock ms, fleet-wide. */
  readonly #perMs: number;
  readonly #buckets = new Map<string, Bucket>();
  #view: View = { n: 1, others: new Map() };
  #viewAt = -Infinity;
  #syncStarted = -Infinity;
  #windowAt = -Infinity;
  #publishedAt = -Infinity;
  #syncing: Promise<void> | null = null;
  readonly #writes = new Set<Promise<unknown>>();

  constructor(deps: RateLimiterDeps) {
    if (deps.policy.perMinute <= 0) throw new Error("a rate limiter needs perMinute > 0");
    this.#deps = deps;
    this.#syncMs = deps.syncMs ?? 250;
    this.#maxViewAgeMs = deps.maxViewAgeMs ?? 2_000;
    this.#now = deps.now ?? (() => performance.now());
    this.#perMs = deps.policy.perMinute / 60_000;
  }

  /** Live API instances in the current view (this one included). */
  get instances(): number {
    return this.#view.n;
  }

  /** This instance's current share (0..1) of a key's budget. */
  shareOf(keyId: string): number {
    return this.#buckets.get(keyId)?.share ?? this.#shareFor(keyId, 0);
  }

  /**
   * Checks and, when admitted, counts one request of `keyId`. Synchronous unless the view is too old
   * (the first request, or the first after an idle spell), which waits for one sync.
   */
  check(keyId: string): RateLimitDecision | Promise<RateLimitDecision> {
    const mono = this.#now();
    if (mono - this.#viewAt > this.#maxViewAgeMs) return this.#sync(mono).then(() => this.#take(keyId));
    if (mono - this.#syncStarted >= this.#syncMs && this.#syncing === null) void this.#sync(mono);
    return this.#take(keyId);
  }

  /** Resolves once the syncs and writes under way have settled (before the KV handle is closed). */
  async settled(): Promise<void> {
    while (this.#syncing || this.#writes.size) await Promise.allSettled([this.#syncing, ...this.#writes]);
  }

  #capacity(share: number): number {
    return Math.max(1, this.#deps.policy.burst * share);
  }

  #shareFor(keyId: string, demand: number): number {
    const rate = this.#perMs * 1000;
    return fairShare(demand, this.#view.others.get(keyId) ?? [], this.#view.n, rate);
  }

  #refill(b: Bucket, now: number): void {
    if (now > b.at) {
      b.tokens = Math.min(this.#capacity(b.share), b.tokens + (now - b.at) * this.#perMs * b.share);
      b.at = now;
    }
  }

  #take(keyId: string): RateLimitDecision {
    const now = this.#deps.clock.now();
    let b = this.#buckets.get(keyId);
    if (!b) {
      const share = this.#shareFor(keyId, 0);
      b = { tokens: this.#capacity(share), at: now, share, count: 0, demand: 0, idle: 0 };
      this.#buckets.set(keyId, b);
    }
    this.#refill(b, now);
    b.count++;
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return {
        allowed: true,
        remaining: Math.min(this.#deps.policy.burst, Math.floor(b.tokens / b.share)),
        retryAfterS: 0,
      };
    }
    const waitMs = (1 - b.tokens) / (this.#perMs * b.share);
    return { allowed: false, remaining: 0, retryAfterS: Math.max(1, Math.ceil(waitMs / 1000)) };
  }

  #sync(mono: number): Promise<void> {
    if (this.#syncing) return this.#syncing;
    this.#syncStarted = mono;
    this.#syncing = this.#runSync(mono).finally(() => (this.#syncing = null));
    return this.#syncing;
  }

  async #runSync(started: number): Promise<void> {
    const { kv, clock, instanceId } = this.#deps;
    // Close the demand window.
    const windowS = Math.max((started - this.#windowAt) / 1000, this.#syncMs / 1000);
    const first = this.#windowAt === -Infinity;
    this.#windowAt = started;
    for (const [keyId, b] of this.#buckets) {
      const rate = first ? 0 : b.count / windowS;
      b.demand = b.demand === 0 ? rate : ALPHA * rate + (1 - ALPHA) * b.demand;
      b.idle = b.count === 0 ? b.idle + 1 : 0;
      b.count = 0;
      this.#refill(b, clock.now());
      // Idle and full: the same as a fresh bucket, so forget it.
      if (b.idle >= 8 && b.tokens >= this.#capacity(b.share)) this.#buckets.delete(keyId);
    }
    const now = clock.now();
    const busiest = [...this.#buckets].filter(([, b]) => b.demand > 0.001)
      .sort((a, b) => b[1].demand - a[1].demand).slice(0, MAX_PUBLISHED_KEYS);
    const record: DemandRecord = {
      instance_id: instanceId,
      at: now,
      keys: Object.fromEntries(busiest.map(([k, b]) => [k, Math.round(b.demand * 1000) / 1000])),
    };
    // Alone in the view, publish once a second only (one KV write less per period; a process that joins
    // sees this one's lease at once and its demand within a second, and this one then publishes each period).
    if (this.#view.n > 1 || started - this.#publishedAt >= 1_000) {
      this.#publishedAt = started;
      const write = kvOp(() => kv.set(rateDemandKey(instanceId), record, { expireIn: 60_000 })).catch(
        () => {},
      );
      this.#writes.add(write);
      write.finally(() => this.#writes.delete(write));
    }
    let view: View;
    // The view is read through the read handle (src/kv/read_handle.ts): it need not wait for the write above.
    const reader = readHandleOf(kv);
    try {
      const [live, records] = await Promise.all([
        listLiveInstances(reader, now),
        kvOp(async () => {
          const out: DemandRecord[] = [];
          for await (const e of reader.list<DemandRecord>({ prefix: rateDemandPrefix })) out.push(e.value);
          return out;
        }),
      ]);
      const staleMs = Math.max(4 * this.#syncMs, 2_000);
      const fresh = records.filter((r) => r.instance_id !== instanceId && now - r.at <= staleMs);
      const ids = new Set(live.filter(servesApi).map((l) => l.instance_id));
      ids.add(instanceId);
      for (const r of fresh) ids.add(r.instance_id);
      const others = new Map<string, number[]>();
      for (const r of fresh) {
        for (const [keyId, demand] of Object.entries(r.keys)) {
          const list = others.get(keyId);
          if (list) list.push(demand);
          else others.set(keyId, [demand]);
        }
      }
      view = { n: ids.size, others };
    } catch {
      view = this.#view; // KV unreachable: keep the last view
    }
    this.#view = view;
    this.#viewAt = started;
    for (const [keyId, b] of this.#buckets) {
      this.#refill(b, now);
      b.share = this.#shareFor(keyId, b.demand);
      b.tokens = Math.min(b.tokens, this.#capacity(b.share));
    }
  }
}
