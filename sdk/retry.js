// @ts-check
/**
 * The opt-in retry policy of the client. Rules and full documentation: `retry.d.ts`.
 *
 * @module
 */
import { ApiError } from "./api_error.js";

/** @import { RetryOptions, RetryPolicy, RetryTarget } from "./retry.d.ts" */

/** The default settings (`retry: true`). */
export const DEFAULT_RETRY = Object.freeze({
  maxAttempts: 3,
  maxElapsedMs: 60_000,
  jitter: 0.2,
  retryNetworkErrors: true,
  networkBackoffMs: 500,
});

/** Ceiling of the exponential backoff after network errors. */
const MAX_NETWORK_BACKOFF_MS = 8_000;

/** Statuses that, without the service's error object, leave the outcome unknown (proxies, gateways). */
const GATEWAY_STATUSES = [502, 503, 504];

/**
 * The default sleep.
 * @param {number} ms
 * @param {AbortSignal} [signal]
 * @returns {Promise<void>}
 */
export function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Checks one numeric setting.
 * @param {string} name
 * @param {number} value
 * @param {number} min
 * @param {number} max
 */
function checkRange(name, value, min, max) {
  if (typeof value !== "number" || Number.isNaN(value) || value < min || value > max) {
    throw new TypeError(`retry.${name} must be a number in ${min}..${max}`);
  }
}

/**
 * Turns the retry option into a policy.
 * @param {boolean | RetryOptions | undefined} option
 * @returns {RetryPolicy | null}
 */
export function resolveRetryPolicy(option) {
  if (option === undefined || option === false) return null;
  const o = option === true ? {} : option;
  if (o === null || typeof o !== "object") throw new TypeError("retry must be a boolean or an object");
  /** @type {RetryPolicy} */
  const policy = {
    maxAttempts: o.maxAttempts ?? DEFAULT_RETRY.maxAttempts,
    maxElapsedMs: o.maxElapsedMs ?? DEFAULT_RETRY.maxElapsedMs,
    jitter: o.jitter ?? DEFAULT_RETRY.jitter,
    retryNetworkErrors: o.retryNetworkErrors ?? DEFAULT_RETRY.retryNetworkErrors,
    networkBackoffMs: o.networkBackoffMs ?? DEFAULT_RETRY.networkBackoffMs,
    sleep: o.sleep ?? sleep,
    now: o.now ?? (() => Date.now()),
    random: o.random ?? Math.random,
    onRetry: o.onRetry,
  };
  checkRange("maxAttempts", policy.maxAttempts, 1, 100);
  if (!Number.isInteger(policy.maxAttempts)) throw new TypeError("retry.maxAttempts must be an integer");
  checkRange("maxElapsedMs", policy.maxElapsedMs, 0, 24 * 3600_000);
  checkRange("jitter", policy.jitter, 0, 1);
  checkRange("networkBackoffMs", policy.networkBackoffMs, 0, MAX_NETWORK_BACKOFF_MS);
  return policy;
}

/**
 * The base wait (before jitter) for an error, or null when it must not be retried.
 * @param {RetryPolicy} policy
 * @param {RetryTarget} target
 * @param {unknown} error
 * @param {number} attempt
 * @returns {number | null}
 */
function baseDelay(policy, target, error, attempt) {
  if (!(error instanceof ApiError)) return null;
  if (error.retryable) return (error.retryAfter ?? 1) * 1000;
  const unknownOutcome = error.code === "SDK_NETWORK_ERROR" ||
    (error.code === "SDK_INVALID_RESPONSE" && GATEWAY_STATUSES.includes(error.status));
  if (!unknownOutcome || !target.safe || !policy.retryNetworkErrors) return null;
  if (error.retryAfter !== null) return error.retryAfter * 1000;
  return Math.min(MAX_NETWORK_BACKOFF_MS, policy.networkBackoffMs * 2 ** (attempt - 1));
}

/**
 * The wait before the next attempt, or null to give up.
 * @param {RetryPolicy} policy
 * @param {RetryTarget} target
 * @param {unknown} error
 * @param {number} attempt
 * @param {number} elapsedMs
 * @returns {number | null}
 */
export function retryDelay(policy, target, error, attempt, elapsedMs) {
  if (attempt >= policy.maxAttempts) return null;
  const base = baseDelay(policy, target, error, attempt);
  if (base === null) return null;
  // Whole ms of stretch, rounded down: in [0, jitter) of the wait as documented (rounding the whole product
  // gave exactly base × (1 + jitter) for a draw ≥ 0.9975, 1200 ms for a 1000 ms wait: a CI run of 7 Dec).
  const delay = base + Math.floor(base * policy.jitter * policy.random());
  if (elapsedMs + delay > policy.maxElapsedMs) return null;
  return delay;
}

/**
 * Runs `attempt` under the policy.
 * @template T
 * @param {RetryPolicy | null} policy
 * @param {RetryTarget} target
 * @param {() => Promise<T>} attempt
 * @param {AbortSignal} [signal]
 * @returns {Promise<T>}
 */
export async function withRetry(policy, target, attempt, signal) {
  if (policy === null) return await attempt();
  const started = policy.now();
  for (let n = 1;; n++) {
    try {
      return await attempt();
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      const delay = retryDelay(policy, target, error, n, policy.now() - started);
      if (delay === null) throw error;
      policy.onRetry?.({
        operation: target.operation,
        attempt: n,
        delayMs: delay,
        error: /** @type {ApiError} */ (error),
      });
      await policy.sleep(delay, signal);
    }
  }
}
