/**
 * Reads of session records that accept a bounded staleness (`GET /v1/sessions/{id}`, the client-token
 * route): concurrent reads of one session share one KV read, a record read less than
 * {@link SESSION_READ_MAX_AGE_MS} ago is served from memory, and a read also refreshes up to nine other
 * records in use that are past half that age (one `getMany`), so a caller polling many sessions costs about
 * one KV round trip per ten records. In `deno task bench:api`, `GET` of 20 sessions in turn went from
 * 0.166× to 0.24-0.33× the bare `Deno.serve` with it (a KV read costs ~35 µs of CPU, ~250 µs when it
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
 * One cache per KV handle (in a service process, one per process), held by the handle's state
 * (`handle_state.ts`: `readSessionCached`, `forgetSession`); it reads through the handle's read handle when
 * the process has one (`read_handle.ts`), so a read never queues behind this process's writes.
 *
 * @module
 */
import { kvOp } from "./guard.ts";
import { sessionKey } from "./keys.ts";
import type { SessionRecord } from "../vocabulary/session_record.ts";

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
  /** The session's place (kept from read to read: marking an entry used allocates nothing). */
  target: Target;
  /** The read in flight that refreshes this entry, if any. */
  pending: Fill | undefined;
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
 *
 * A read in flight is kept on the entry it refreshes, not in a map of its own: with 20 sessions polled in
 * turn, setting and deleting ten map keys per read made ~70-115 KB per scavenge reach V8's old generation
 * and a mark-compact run every ~3 s (10-20 ms pauses on a one-core service, p99 over 5 ms); kept on the
 * entries, ~0.5 KB and none in 15 s (`--trace-gc-nvp`).
 */
export class SessionReadCache {
  readonly #kv: Deno.Kv;
  readonly #maxAgeMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;
  #entries = new Map<string, Entry>();
  /** Entries served since their read, oldest first (candidates to ride along with another read). */
  #hot = new Map<string, Target>();
  /**
   * Reads in flight of keys that have no entry yet. A key with an entry keeps its read in flight on the
   * entry itself (`pending`): a read then changes no map but the one of entries.
   */
  #fills = new Map<string, Fill>();
  /** Reads in flight. */
  #reading = 0;
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
    if (e) {
      if (this.#now() - e.readAt <= this.#maxAgeMs) {
        if (!e.used) {
          e.used = true;
          if (this.#hot.size < this.#maxEntries) this.#hot.set(e.target.k, e.target);
        }
        return Promise.resolve(e.record);
      }
      if (e.pending) return this.#join(e.pending);
      return this.#fill(e.target, e);
    }
    const fill = this.#fills.get(k);
    return fill ? this.#join(fill) : this.#fill({ k, projectId, sessionId }, undefined);
  }

  /** Drops what is known of a session: called after every write to it through this handle. */
  forget(projectId: string, sessionId: string): void {
    const k = `${projectId}\0${sessionId}`;
    this.#entries.delete(k);
    this.#hot.delete(k);
    this.#fills.delete(k);
    if (this.#reading > 0) this.#invalidated.set(k, ++this.#seq);
  }

  /** Reads `first` (whose entry, if any, has expired) and the entries riding along; returns its record. */
  #fill(first: Target, firstEntry: Entry | undefined): Promise<SessionRecord | null> {
    const batch = [first];
    const entries: (Entry | undefined)[] = [firstEntry];
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
      if (now - e.readAt < this.#maxAgeMs / 2 || e.pending) continue;
      this.#hot.delete(k);
      batch.push(t);
      entries.push(e);
    }
    const seq = this.#seq;
    this.#reading++;
    const settle = () => {
      for (let i = 0; i < batch.length; i++) {
        const e = entries[i];
        if (e?.pending?.read === read) e.pending = undefined;
        const fill = this.#fills.get(batch[i].k);
        if (fill?.read === read) this.#fills.delete(batch[i].k);
      }
      if (--this.#reading === 0) this.#invalidated.clear();
    };
    const read: Promise<(SessionRecord | null)[]> = kvOp(() =>
      this.#kv.getMany<SessionRecord[]>(batch.map((t) => sessionKey(t.projectId, t.sessionId)))
    ).then((results) => {
      const readAt = this.#now();
      for (let i = 0; i < batch.length; i++) {
        const target = batch[i];
        if ((this.#invalidated.get(target.k) ?? 0) > seq) continue;
        if (this.#entries.size >= this.#maxEntries) this.#prune();
        this.#entries.set(target.k, {
          record: results[i].value,
          readAt,
          used: false,
          target,
          pending: undefined,
        });
      }
      settle();
      // The records only: KV's entry objects (keys, versionstamps) are let go at once.
      return results.map((r) => r.value);
    }, (err) => {
      settle();
      throw err;
    });
    for (let i = 0; i < batch.length; i++) {
      const fill = { read, i };
      const e = entries[i];
      if (e) e.pending = fill;
      else this.#fills.set(batch[i].k, fill);
    }
    read.catch(() => {}); // the failure reaches the readers through `#join`
    return this.#join({ read, i: 0 });
  }

  #join(fill: Fill): Promise<SessionRecord | null> {
    return fill.read.then((values) => values[fill.i]);
  }

  #prune(): void {
    const now = this.#now();
    for (const [k, e] of this.#entries) {
      if (now - e.readAt > this.#maxAgeMs && !e.pending) this.#entries.delete(k);
    }
    if (this.#entries.size >= this.#maxEntries) this.#entries.clear();
    for (const k of this.#hot.keys()) if (!this.#entries.has(k)) this.#hot.delete(k);
  }
}
