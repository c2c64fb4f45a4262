/**
 * Reads of session records that accept a bounded staleness (`GET /v1/sessions/{id}`, the client-token
 * route): concurrent reads of one session share one KV read, and a record read less than
 * {@link SESSION_READ_MAX_AGE_MS} ago is served from memory.
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

interface Entry {
  record: SessionRecord | null;
  /** When the read completed (monotonic ms). */
  readAt: number;
}

/** Session records recently read through one KV handle. */
export class SessionReadCache {
  readonly #kv: Deno.Kv;
  readonly #maxAgeMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;
  #entries = new Map<string, Entry>();
  #fills = new Map<string, Promise<SessionRecord | null>>();
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
    if (e && this.#now() - e.readAt <= this.#maxAgeMs) return Promise.resolve(e.record);
    let fill = this.#fills.get(k);
    if (!fill) {
      fill = this.#fill(k, projectId, sessionId).finally(() => {
        if (this.#fills.get(k) === fill) this.#fills.delete(k);
        if (this.#fills.size === 0) this.#invalidated.clear();
      });
      this.#fills.set(k, fill);
    }
    return fill;
  }

  /** Drops what is known of a session: called after every write to it through this handle. */
  forget(projectId: string, sessionId: string): void {
    const k = `${projectId}\0${sessionId}`;
    this.#entries.delete(k);
    if (this.#fills.delete(k) || this.#fills.size) this.#invalidated.set(k, ++this.#seq);
  }

  async #fill(k: string, projectId: string, sessionId: string): Promise<SessionRecord | null> {
    const seq = this.#seq;
    const record = (await kvOp(() => this.#kv.get<SessionRecord>(sessionKey(projectId, sessionId)))).value;
    if ((this.#invalidated.get(k) ?? 0) <= seq) {
      if (this.#entries.size >= this.#maxEntries) this.#prune();
      this.#entries.set(k, { record, readAt: this.#now() });
    }
    return record;
  }

  #prune(): void {
    const now = this.#now();
    for (const [k, e] of this.#entries) if (now - e.readAt > this.#maxAgeMs) this.#entries.delete(k);
    if (this.#entries.size >= this.#maxEntries) this.#entries.clear();
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
