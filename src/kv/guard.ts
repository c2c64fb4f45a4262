/**
 * Turns storage failures into the retryable `SVC_SESSION_STATE_UNAVAILABLE`.
 *
 * @module
 */
import { ApiError } from "../errors.ts";

/** How often a KV operation is retried when SQLite reports the database locked by another process. */
const LOCKED_RETRIES = 6;

function isLocked(err: unknown): boolean {
  return err instanceof Error && /database is locked/i.test(err.message);
}

/** KV refusing a key or value as too large: a bug (input must be bounded before it reaches a key), not an outage. */
function isTooLarge(err: unknown): boolean {
  return err instanceof TypeError && /too large|exceeds/i.test(err.message);
}

/**
 * Runs a KV operation; an error that is not already an {@link ApiError} (a KV I/O failure, a closed
 * database) becomes `503 SVC_SESSION_STATE_UNAVAILABLE`. KV atomic operations either commit whole or not at
 * all, so nothing is half-written. "database is locked" (several processes on one SQLite file) is transient:
 * the operation is retried a few times with backoff first (`fn` must be safe to run again, as every
 * compare-and-set loop and plain read or write of this service is).
 */
export async function kvOp<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 0;; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof ApiError || isTooLarge(err)) throw err;
      if (isLocked(err) && attempt < LOCKED_RETRIES) {
        await new Promise((r) => setTimeout(r, (5 << attempt) + Math.random() * 10));
        continue;
      }
      throw new ApiError("SVC_SESSION_STATE_UNAVAILABLE", undefined, { cause: err });
    }
  }
}

/**
 * Retries a compare-and-set loop body until it reports success. `attempt` returns `true` when its atomic
 * commit went through, `false` on a version conflict. Between conflicts it waits a little, with jitter.
 */
export async function casLoop(attempt: () => Promise<boolean>, maxAttempts = 200): Promise<void> {
  for (let i = 0; i < maxAttempts; i++) {
    if (await attempt()) return;
    await new Promise((r) => setTimeout(r, Math.random() * Math.min(20, 1 + i)));
  }
  throw new Error("KV contention: compare-and-set did not succeed");
}

/** Serialises async work per key inside one process (reduces CAS conflicts; KV checks stay authoritative). */
export class KeyedMutex {
  #tails = new Map<string, Promise<void>>();

  /** Runs `fn` after every earlier `run` with the same key has settled. */
  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.#tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    const tail = prev.then(() => mine);
    this.#tails.set(key, tail);
    await prev;
    try {
      return await fn();
    } finally {
      release();
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    }
  }
}

/**
 * Retries a KV write that must land (a session's final state) when storage is briefly unavailable:
 * up to `attempts` tries, `delayMs` apart. Other errors are thrown at once.
 */
export async function retryUnavailable<T>(fn: () => Promise<T>, attempts = 4, delayMs = 150): Promise<T> {
  for (let i = 1;; i++) {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof ApiError) || err.code !== "SVC_SESSION_STATE_UNAVAILABLE" || i >= attempts) {
        throw err;
      }
      await new Promise((r) => setTimeout(r, delayMs * i));
    }
  }
}
