/**
 * The end journal: final transitions that must land. Once a session's runtime has stopped (its engine and
 * media are gone), its record must say so, with the true reason and `ended_at`, exactly one end event and its
 * slots freed — even when KV is unavailable at that moment. The journal tries at once; while storage stays
 * unavailable it keeps the transition in memory and retries it with backoff until it lands (or the record
 * turns out to be final already, ended by someone else), so an outage delays the record, never loses it.
 *
 * What it cannot survive is this process dying before storage comes back: then the session's owner lease
 * runs out and the reaper ends it as `owner_lost` (see `src/fleet/reaper.ts`).
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import { ApiError } from "../errors.ts";
import { type TransitionResult, transitionSession } from "../kv/sessions.ts";
import type { Logger } from "../log.ts";
import type { SessionRecord } from "../vocabulary/session_record.ts";
import { isLive, type SessionStatus } from "../vocabulary/session_states.ts";

/** A final transition of a session whose runtime has stopped. */
export interface PendingEnd {
  projectId: string;
  sessionId: string;
  /** Statuses the record may be in (live ones). */
  from: readonly SessionStatus[];
  /** The terminal status. */
  to: SessionStatus;
  /** Fields written with it (`ended_at` is the moment the runtime stopped, not the moment it lands). */
  patch: Partial<SessionRecord>;
}

/** Settings of the retry loop. */
export interface EndJournalOptions {
  /** First retry delay, then doubled up to `maxDelayMs` (defaults 200 ms and 5 s). */
  firstDelayMs?: number;
  maxDelayMs?: number;
}

interface Entry {
  end: PendingEnd;
  /** Resolves with the outcome once the transition landed (or was found moot). */
  landed: PromiseWithResolvers<TransitionResult>;
}

/** Holds and retries the final transitions of one process. */
export class EndJournal {
  readonly #pending = new Map<string, Entry>();
  #loop: Promise<void> | null = null;
  #wake: (() => void) | null = null;
  #stopped = false;

  constructor(
    readonly deps: { kv: Deno.Kv; clock: Clock; logger: Logger } & EndJournalOptions,
  ) {}

  /** Sessions whose final transition is still waiting for storage. */
  get size(): number {
    return this.#pending.size;
  }

  /** The pending end of a session, if storage has not taken it yet. */
  pending(sessionId: string): PendingEnd | undefined {
    return this.#pending.get(sessionId)?.end;
  }

  /**
   * Records a final transition: tries now and, while storage is unavailable, keeps retrying in the
   * background. Resolves with the outcome once it landed (`ok: false` with the current record when the
   * record was not in `from`, e.g. ended by someone else meanwhile). With `waitMs`, gives up waiting after
   * that long and throws `503 SVC_SESSION_STATE_UNAVAILABLE` — the transition stays pending and still lands.
   */
  async record(end: PendingEnd, waitMs = Infinity): Promise<TransitionResult> {
    let entry = this.#pending.get(end.sessionId);
    if (!entry) {
      entry = { end, landed: Promise.withResolvers() };
      entry.landed.promise.catch(() => {});
      this.#pending.set(end.sessionId, entry);
      const first = await this.#attempt(entry);
      if (first) return first;
      this.#ensureLoop();
    }
    return await this.#wait(entry, waitMs);
  }

  /** Changes fields of a pending transition; false when it is no longer pending (it landed). */
  amend(sessionId: string, patch: Partial<SessionRecord>): boolean {
    const entry = this.#pending.get(sessionId);
    if (!entry) return false;
    entry.end = { ...entry.end, patch: { ...entry.end.patch, ...patch } };
    return true;
  }

  /** Tries the pending transition of a session now; resolves with the outcome if it landed. */
  async retry(sessionId: string): Promise<TransitionResult | null> {
    const entry = this.#pending.get(sessionId);
    if (!entry) return null;
    return await this.#attempt(entry);
  }

  /** Tries every pending transition until `deadline` (shutdown). Resolves with how many are still pending. */
  async flush(deadline: number): Promise<number> {
    while (this.#pending.size && this.deps.clock.now() < deadline) {
      for (const entry of [...this.#pending.values()]) await this.#attempt(entry);
      if (!this.#pending.size) break;
      await this.deps.clock.sleep(Math.min(200, Math.max(0, deadline - this.deps.clock.now())));
    }
    return this.#pending.size;
  }

  /** Stops the retry loop (pending transitions are dropped with the process). */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#wake?.();
    await this.#loop;
  }

  async #wait(entry: Entry, waitMs: number): Promise<TransitionResult> {
    if (waitMs === Infinity) return await entry.landed.promise;
    const stop = new AbortController();
    const timeout = this.deps.clock.sleep(waitMs, stop.signal).then(
      () => Promise.reject(new ApiError("SVC_SESSION_STATE_UNAVAILABLE")),
      () => new Promise<never>(() => {}),
    );
    try {
      return await Promise.race([entry.landed.promise, timeout]);
    } finally {
      stop.abort();
    }
  }

  /** One try; resolves with the outcome when it is settled, null while storage is unavailable. */
  async #attempt(entry: Entry): Promise<TransitionResult | null> {
    const { projectId, sessionId, from, to, patch } = entry.end;
    let result: TransitionResult;
    try {
      result = await transitionSession(
        this.deps.kv,
        projectId,
        sessionId,
        from,
        to,
        patch,
        this.deps.clock.now(),
      );
    } catch (err) {
      if (err instanceof ApiError && err.code === "SVC_SESSION_STATE_UNAVAILABLE") return null;
      // Not a storage outage (a programming error): give up on it loudly rather than retry forever.
      this.deps.logger.error("could not record a session's end", {
        session_id: sessionId,
        error: String(err),
      });
      result = { ok: false, record: null };
    }
    if (this.#pending.get(sessionId) !== entry) return result;
    this.#pending.delete(sessionId);
    if (!result.ok && result.record && isLive(result.record.status)) {
      this.deps.logger.warn("a session's end found its record in an unexpected status", {
        session_id: sessionId,
        status: result.record.status,
      });
    }
    entry.landed.resolve(result);
    return result;
  }

  #ensureLoop(): void {
    if (this.#loop || this.#stopped) return;
    this.#loop = (async () => {
      let delay = this.deps.firstDelayMs ?? 200;
      const max = this.deps.maxDelayMs ?? 5000;
      let warned = false;
      while (this.#pending.size && !this.#stopped) {
        const nap = new AbortController();
        this.#wake = () => nap.abort();
        await this.deps.clock.sleep(delay, nap.signal).catch(() => {});
        this.#wake = null;
        if (this.#stopped) break;
        for (const entry of [...this.#pending.values()]) await this.#attempt(entry);
        if (this.#pending.size) {
          if (!warned) {
            this.deps.logger.warn("session state unavailable: final transitions are kept and retried", {
              pending: this.#pending.size,
            });
            warned = true;
          }
          delay = Math.min(max, delay * 2);
        }
      }
      if (warned && !this.#pending.size) {
        this.deps.logger.info("session state available again: ends recorded");
      }
    })().finally(() => (this.#loop = null));
  }
}
