/**
 * The API-key check from memory, coherent across processes.
 *
 * Each process keeps the hash-index entries it has read (`["api_key_hash", sha256]`, a found key or a miss)
 * in memory. Every revocation writes `["api_key_revocation"]` in the same atomic operation as the revoked
 * index entry, so that key's versionstamp is a **revocation epoch**: it grows whenever any key is revoked.
 * An entry is read together with the epoch (one `getMany`, one snapshot) and is used only while
 *
 * - the epoch it was read with is still the newest this process knows, and
 * - this process has confirmed the epoch recently: a read of the epoch that *started* at most
 *   `maxStaleMs` ago has completed.
 *
 * While requests flow, the epoch is re-read in the background every `pollMs` (one small KV read per
 * interval per process, never per request); after an idle spell the first request reads its entry and
 * the epoch again (one round trip). So a key revoked anywhere is refused by every process at most
 * `maxStaleMs` (default 500 ms) after the revocation committed; a revocation made through this process's
 * KV handle takes effect here at once. A new key works at once everywhere (an unknown hash is read from
 * KV; a miss is cached for `maxStaleMs` only, and a key cannot be presented before it is created). When
 * KV is unreachable, confirmations stop, entries age out, and requests fail with 503 rather than trust a
 * key that may have been revoked.
 *
 * Deno KV on a local file delivers no `watch()` events written by other processes, so this polls.
 *
 * One cache per KV handle (`apiKeyCacheFor` of `handle_state.ts`): in a service process, one per process. It reads through
 * the handle's read handle when the process has one (`read_handle.ts`).
 *
 * @module
 */
import type { Scope } from "../auth/scopes.ts";
import { kvOp } from "./guard.ts";
import { apiKeyHashKey, apiKeyRevocationKey } from "./keys.ts";

/**
 * The hash index entry that authenticates a request (`["api_key_hash", sha256]`, written by
 * `api_keys.ts` with the key's record); processes keep the entries they read in memory.
 */
export interface ApiKeyIndex {
  project_id: string;
  key_id: string;
  scopes: Scope[];
  revoked_at: number | null;
}

/** Tuning of an {@link ApiKeyCache}. */
export interface ApiKeyCacheOptions {
  /** Background re-read period of the revocation epoch while requests flow (default 100 ms). */
  pollMs?: number;
  /** Longest time an entry is trusted without a newer confirmation of the epoch (default 500 ms). */
  maxStaleMs?: number;
  /** Entries kept at most; past it the cache is emptied (default 50,000). */
  maxEntries?: number;
  /** Monotonic clock, ms (default `performance.now`). */
  now?: () => number;
}

interface Entry {
  index: ApiKeyIndex | null;
  /** Revocation epoch the entry was read with ("" before any revocation). */
  epoch: string;
  /** When the read started (monotonic ms). */
  readAt: number;
}

/** In-memory API-key index entries of one KV handle, invalidated by the revocation epoch. */
export class ApiKeyCache {
  readonly #kv: Deno.Kv;
  readonly #pollMs: number;
  readonly #maxStaleMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;
  #entries = new Map<string, Entry>();
  /** Newest revocation epoch known (versionstamps compare as strings). */
  #epoch = "";
  /** Start time of the newest completed read of the epoch. */
  #confirmedAt = -Infinity;
  #polling: Promise<void> | null = null;
  /**
   * Reads in flight, one per hash: concurrent requests with one key share it while it is younger than
   * `maxStaleMs` (an older one may predate a revocation past the bound).
   */
  #fills = new Map<string, { promise: Promise<ApiKeyIndex | null>; started: number }>();

  constructor(kv: Deno.Kv, options: ApiKeyCacheOptions = {}) {
    this.#kv = kv;
    this.#pollMs = options.pollMs ?? 100;
    this.#maxStaleMs = options.maxStaleMs ?? 500;
    this.#maxEntries = options.maxEntries ?? 50_000;
    this.#now = options.now ?? (() => performance.now());
  }

  /**
   * The entry of `keyHash` when memory can answer (`null` = no such key), or `undefined` when KV must be
   * read ({@link lookup}). Starts a background confirmation of the epoch when one is due.
   */
  peek(keyHash: string): ApiKeyIndex | null | undefined {
    const now = this.#now();
    const age = now - this.#confirmedAt;
    if (age >= this.#pollMs && this.#polling === null) this.#poll(now);
    if (age > this.#maxStaleMs) return undefined;
    const e = this.#entries.get(keyHash);
    if (!e || e.epoch !== this.#epoch) return undefined;
    if (e.index === null && now - e.readAt > this.#maxStaleMs) return undefined;
    return e.index;
  }

  /** The index entry of `keyHash` (null when no key has that hash): from memory, or one KV read. */
  lookup(keyHash: string): Promise<ApiKeyIndex | null> {
    const hit = this.peek(keyHash);
    if (hit !== undefined) return Promise.resolve(hit);
    const now = this.#now();
    const current = this.#fills.get(keyHash);
    if (current && now - current.started <= this.#maxStaleMs) return current.promise;
    const fill = { promise: this.#read(keyHash, now), started: now };
    this.#fills.set(keyHash, fill);
    fill.promise.finally(() => {
      if (this.#fills.get(keyHash) === fill) this.#fills.delete(keyHash);
    }).catch(() => {});
    return fill.promise;
  }

  /**
   * Records a revocation committed through this process (`versionstamp` of its atomic operation): every
   * entry read before it is stale from now on.
   */
  noteRevocation(versionstamp: string): void {
    this.#noteEpoch(versionstamp, -Infinity);
    this.#fills.clear();
  }

  /** Resolves once the background reads under way have settled (before the KV handle is closed). */
  async settled(): Promise<void> {
    while (this.#polling || this.#fills.size) {
      await Promise.allSettled([this.#polling, ...[...this.#fills.values()].map((f) => f.promise)]);
    }
  }

  async #read(keyHash: string, started: number): Promise<ApiKeyIndex | null> {
    const [index, epoch] = await kvOp(() =>
      this.#kv.getMany<[ApiKeyIndex, unknown]>([apiKeyHashKey(keyHash), apiKeyRevocationKey])
    );
    const vs = epoch.versionstamp ?? "";
    this.#noteEpoch(vs, started);
    if (vs === this.#epoch) {
      if (this.#entries.size >= this.#maxEntries) this.#entries.clear();
      this.#entries.set(keyHash, { index: index.value, epoch: vs, readAt: started });
    }
    return index.value;
  }

  #poll(started: number): void {
    this.#polling = kvOp(() => this.#kv.get(apiKeyRevocationKey)).then(
      (e) => this.#noteEpoch(e.versionstamp ?? "", started),
      () => {}, // KV unreachable: entries age out and requests read KV (and fail) instead
    ).finally(() => (this.#polling = null));
  }

  /** `epoch` was the newest revocation as of `at` (or, with `at = -Infinity`, exists). */
  #noteEpoch(epoch: string, at: number): void {
    if (epoch > this.#epoch) {
      this.#epoch = epoch;
      this.#entries.clear();
    }
    // A read that started at `at` saw `epoch` ≤ the newest known: nothing newer existed then.
    if (at > this.#confirmedAt) this.#confirmedAt = at;
  }
}
