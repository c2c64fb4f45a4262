/**
 * Reads of session records that accept a bounded staleness (`GET /v1/sessions/{id}`, the client-token
 * route): concurrent reads of one session share one KV read, a record read less than
 * {@link SESSION_READ_MAX_AGE_MS} ago is served from memory, and a read also refreshes up to nine other
 * records in use that are past half that age (one `getMany`), so a caller polling many sessions costs about
 * one KV round trip per ten records. In `deno task bench:api`, `GET` of 20 sessions in turn went from
 * 0.166× to 0.26-0.29× the bare `Deno.serve` with it (a KV read costs ~35 µs of CPU, ~250 µs when it
 * wakes the idle SQLite thread, and ~13 µs per further key in the same `getMany`).
 *
 * Staleness: a record served may miss a change committed by another process at most
 * `SESSION_READ_MAX_AGE_MS` + the duration of one KV read before the request (the read it comes from
 * completed at most `SESSION_READ_MAX_AGE_MS` before the request, and a read reflects KV as of some
 * moment while it ran; under load that duration includes the wait for the event loop, a few ms at the
 * most loaded point of the bench). Changes committed through this process never go unseen: every session write of
 * `sessions.ts` calls {@link forgetSession} after its commit, which drops the entry and any read still in
 * flight (a read that started before the write can no longer fill the cache). So an instance that ended
 * a session never shows it active afterwards.
 *
 * One cache per KV handle (in a service process, one per process); it reads through the handle's read
 * handle when the process has one (`read_handle.ts`), so a read never queues behind this process's writes.
 *
 * @module
 */
import { kvOp } from "./guard.ts";
import { sessionKey } from "./keys.ts";
import { readHandleOf } from "./read_handle.ts";
import type { SessionRecord } from "./sessions.ts";

/** How long a session record read from KV is served from memory, ms. */
export const SESSION_READ_MAX_AGE_MS = 5;
/** Keys one KV read carries at most (Deno KV's `getMany` limit). */
const BATCH_MAX = 10;
/** Recently used entries looked at, per read, for a refresh riding along. */
const RIDE_SCAN = 32;

interface Entry {
  record: SessionRecord | null;
  /** When the read completed (monotonic ms). */
  readAt: number;
  /** Served since that read (so worth refreshing along with another one). */
  used: boolean;
}

/** A read in flight and a key's place in it. */
interface Fill {
  read: Promise<(SessionRecord | null)[]>;
  i: number;
}

/** A session's place in the cache: its KV key and its map key. */
interface Target {
  k: string;
  projectId: string;
  sessionId: string;
}

/**
 * Session records recently read through one KV handle.
 *
 * A read that misses also refreshes, in the same `getMany`, up to {@link BATCH_MAX} − 1 other records that
 * were served since their own read and are past half their age, so a caller reading many sessions in
 * turn costs about one KV round trip per ten records instead of one per record. The staleness bound is
 * unchanged: every entry is served for {@link SESSION_READ_MAX_AGE_MS} after the read that produced it.
 */
export class SessionReadCache {
  readonly #kv: Deno.Kv;
  readonly #maxAgeMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;
  #entries = new Map<string, Entry>();
  /** Entries served since their read, oldest first (candidates to ride along with another read). */
  #hot = new Map<string, Target>();
  /** Reads in flight, by key: the read and the key's place in it. */
  #fills = new Map<string, Fill>();
  /** Sequence number of the last invalidation of each key (kept while reads are in flight). */
  #invalidated = new Map<string, number>();
  #seq = 0;

  constructor(
    kv: Deno.Kv,
    options: { maxAgeMs?: number; maxEntries?: number; now?: () => number } = {},
  ) {
    this.#kv = kv;
    this.#maxAgeMs = options.maxAgeMs ?? SESSION_READ_MAX_AGE_MS;
    this.#maxEntries = options.maxEntries ?? 10_000;
    this.#now = options.now ?? (() => performance.now());
  }

  /** A session of a project (null: unknown, or another project's), at most the bounded staleness old. */
  read(projectId: string, sessionId: string): Promise<SessionRecord | null> {
    const k = `${projectId}\0${sessionId}`;
    const e = this.#entries.get(k);
    if (e && this.#now() - e.readAt <= this.#maxAgeMs) {
      if (!e.used) {
        e.used = true;
        if (this.#hot.size < this.#maxEntries) this.#hot.set(k, { k, projectId, sessionId });
      }
      return Promise.resolve(e.record);
    }
    const fill = this.#fills.get(k);
    return fill ? this.#join(fill) : this.#fill({ k, projectId, sessionId });
  }

  /** Drops what is known of a session: called after every write to it through this handle. */
  forget(projectId: string, sessionId: string): void {
    const k = `${projectId}\0${sessionId}`;
    this.#entries.delete(k);
    this.#hot.delete(k);
    if (this.#fills.delete(k) || this.#fills.size) this.#invalidated.set(k, ++this.#seq);
  }

  /** Reads `first` and the entries riding along with it; returns `first`'s record. */
  #fill(first: Target): Promise<SessionRecord | null> {
    const batch = [first];
    this.#hot.delete(first.k);
    const now = this.#now();
    let scanned = 0;
    for (const [k, t] of this.#hot) {
      if (batch.length >= BATCH_MAX || scanned++ >= RIDE_SCAN) break;
      const e = this.#entries.get(k);
      if (!e) {
        this.#hot.delete(k);
        continue;
      }
      if (now - e.readAt < this.#maxAgeMs / 2 || this.#fills.has(k)) continue;
      this.#hot.delete(k);
      batch.push(t);
    }
    const seq = this.#seq;
    const read = kvOp(() =>
      this.#kv.getMany<SessionRecord[]>(batch.map((t) => sessionKey(t.projectId, t.sessionId)))
    )
      .then((results) => {
        const readAt = this.#now();
        for (let i = 0; i < batch.length; i++) {
          const { k } = batch[i];
          if (this.#fills.get(k)?.read === read) this.#fills.delete(k);
          if ((this.#invalidated.get(k) ?? 0) > seq) continue;
          if (this.#entries.size >= this.#maxEntries) this.#prune();
          this.#entries.set(k, { record: results[i].value, readAt, used: false });
        }
        if (this.#fills.size === 0) this.#invalidated.clear();
        // The records only: KV's entry objects (keys, versionstamps) are let go at once. Under load something
        // outside this module (not identified) keeps a settled read's result past a scavenge, so they reach
        // the old generation: GET of 20 sessions in turn promoted ~110 KB per scavenge with the entries kept,
        // ~68 KB without (`--trace-gc-nvp`); of one session, nearly none.
        return results.map((r) => r.value);
      }, (err) => {
        for (const { k } of batch) if (this.#fills.get(k)?.read === read) this.#fills.delete(k);
        if (this.#fills.size === 0) this.#invalidated.clear();
        throw err;
      });
    // One promise per read, not per key: a reader of a rider joins it only if its entry expires meanwhile.
    for (let i = 0; i < batch.length; i++) this.#fills.set(batch[i].k, { read, i });
    read.catch(() => {}); // the failure reaches the readers through `#join`
    return this.#join({ read, i: 0 });
  }

  #join(fill: Fill): Promise<SessionRecord | null> {
    return fill.read.then((values) => values[fill.i]);
  }

  #prune(): void {
    const now = this.#now();
    for (const [k, e] of this.#entries) if (now - e.readAt > this.#maxAgeMs) this.#entries.delete(k);
    if (this.#entries.size >= this.#maxEntries) this.#entries.clear();
    for (const k of this.#hot.keys()) if (!this.#entries.has(k)) this.#hot.delete(k);
  }
}

const caches = new WeakMap<Deno.Kv, SessionReadCache>();

function cacheOf(kv: Deno.Kv): SessionReadCache {
  let cache = caches.get(kv);
  // Reads go through the read handle, when there is one (src/kv/read_handle.ts).
  if (!cache) caches.set(kv, cache = new SessionReadCache(readHandleOf(kv)));
  return cache;
}

/** Reads a session through the handle's cache (see the module documentation for the staleness bound). */
export function readSessionCached(
  kv: Deno.Kv,
  projectId: string,
  sessionId: string,
): Promise<SessionRecord | null> {
  return cacheOf(kv).read(projectId, sessionId);
}

/** Forgets a session in the handle's cache (after a write to it). */
export function forgetSession(kv: Deno.Kv, projectId: string, sessionId: string): void {
  caches.get(kv)?.forget(projectId, sessionId);
}
