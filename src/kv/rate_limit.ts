/**
 * Per-API-key request rate limiting with GCRA (the generic cell rate algorithm, as in redis-cell).
 *
 * One value per key: the theoretical arrival time (TAT, ms). With emission interval T = 60000 / perMinute
 * and burst B, a request at `now` is admitted iff `max(TAT, now) + T - now <= B·T`; admitting stores the
 * new TAT with compare-and-set, so concurrent requests (in one process or many) never over-admit.
 *
 * @module
 */
import { casLoop, KeyedMutex, kvOp } from "./guard.ts";
import { rateLimitKey } from "./keys.ts";

/** Limiter settings. */
export interface RateLimitPolicy {
  perMinute: number;
  burst: number;
}

/** Outcome of one check. */
export interface RateLimitDecision {
  allowed: boolean;
  /** Requests still admissible right now. */
  remaining: number;
  /** Seconds until one more request would be admitted (≥ 1 when refused). */
  retryAfterS: number;
}

const mutex = new KeyedMutex();

/** Checks and, when admitted, records one request of `keyId`. */
export async function checkRateLimit(
  kv: Deno.Kv,
  projectId: string,
  keyId: string,
  policy: RateLimitPolicy,
  now: number,
): Promise<RateLimitDecision> {
  const T = 60_000 / policy.perMinute;
  const limit = policy.burst * T;
  return await kvOp(() =>
    mutex.run(`${projectId}\0${keyId}`, async () => {
      let decision!: RateLimitDecision;
      await casLoop(async () => {
        const entry = await kv.get<number>(rateLimitKey(projectId, keyId));
        const tat = Math.max(entry.value ?? now, now);
        const next = tat + T;
        if (next - now > limit) {
          decision = {
            allowed: false,
            remaining: 0,
            retryAfterS: Math.max(1, Math.ceil((next - limit - now) / 1000)),
          };
          return true;
        }
        const res = await kv.atomic().check(entry).set(rateLimitKey(projectId, keyId), next, {
          expireIn: Math.ceil(limit + 60_000),
        }).commit();
        decision = { allowed: true, remaining: Math.floor((limit - (next - now)) / T), retryAfterS: 0 };
        return res.ok;
      });
      return decision;
    })
  );
}
