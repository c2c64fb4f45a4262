/**
 * What a process keeps in memory beside one KV handle, as one object the composition root owns: the read
 * handle its caches read through (`read_handle.ts`), the retention of ended sessions written through it
 * (`session_retention.ts`), the session read cache (`session_cache.ts`), the API-key cache
 * (`api_key_cache.ts`) and the listing cursors' key (`list_cursor_key.ts`).
 *
 * The composition root creates it with the handle (`app/storage.ts`: {@link KvHandleState} with its read
 * handle and retention, then {@link attachKvState}), settles its caches before closing the handle, and
 * detaches it. The storage functions of `kv/` take the handle (as every caller holds it) and find its state
 * here; a handle no composition root attached (a test's own, the OpenAPI emitter's) gets the defaults on
 * first use: no read handle, the default retention.
 *
 * @module
 */
import { ApiKeyCache } from "./api_key_cache.ts";
import { loadCursorKey } from "./list_cursor_key.ts";
import { SessionReadCache } from "./session_cache.ts";
import type { SessionRecord } from "../vocabulary/session_record.ts";

/** The default retention of ended sessions: 30 days. */
export const DEFAULT_SESSION_RETENTION_MS = 30 * 24 * 3600_000;

/** What a handle's state is created with. */
export interface KvHandleOptions {
  /** A second handle on the same database for the caches' reads (default: the handle itself). */
  read?: Deno.Kv;
  /** Retention of ended sessions in ms; null keeps them forever (default 30 days). */
  retentionMs?: number | null;
}

/** The in-memory state of one KV handle (see the module documentation). */
export class KvHandleState {
  /** The handle the caches read through (set before they are first used: they take it when created). */
  read: Deno.Kv;
  /** Retention of ended sessions written through the handle, ms; null: kept forever. */
  retentionMs: number | null;
  #sessions: SessionReadCache | null = null;
  #apiKeys: ApiKeyCache | null = null;
  #cursorKey: Promise<CryptoKey> | null = null;

  constructor(readonly kv: Deno.Kv, options: KvHandleOptions = {}) {
    this.read = options.read ?? kv;
    this.retentionMs = options.retentionMs === undefined ? DEFAULT_SESSION_RETENTION_MS : options.retentionMs;
  }

  /** The session read cache (created on first use, reading through {@link read}). */
  get sessions(): SessionReadCache {
    return this.#sessions ??= new SessionReadCache(this.read);
  }

  /** The API-key cache (created on first use, reading through {@link read}). */
  get apiKeys(): ApiKeyCache {
    return this.#apiKeys ??= new ApiKeyCache(this.read);
  }

  /** Forgets a session in the read cache, if there is one (after a write to it). */
  forgetSession(projectId: string, sessionId: string): void {
    this.#sessions?.forget(projectId, sessionId);
  }

  /** The deployment's cursor key (loaded or created in KV on first use; a failed load is not kept). */
  cursorKey(now: number): Promise<CryptoKey> {
    if (!this.#cursorKey) {
      const key = this.#cursorKey = loadCursorKey(this.kv, now);
      key.catch(() => {
        if (this.#cursorKey === key) this.#cursorKey = null;
      });
    }
    return this.#cursorKey;
  }

  /** Resolves once the caches' background reads have settled (before the handle is closed). */
  async settled(): Promise<void> {
    await this.#apiKeys?.settled();
  }
}

const states = new WeakMap<Deno.Kv, KvHandleState>();

/** Makes `state` the state of its handle; returns the detaching (which leaves a later state in place). */
export function attachKvState(state: KvHandleState): () => void {
  states.set(state.kv, state);
  return () => {
    if (states.get(state.kv) === state) states.delete(state.kv);
  };
}

/** The state of `kv`: the attached one, or one with the defaults, attached on first use. */
export function kvStateOf(kv: Deno.Kv): KvHandleState {
  let state = states.get(kv);
  if (!state) attachKvState(state = new KvHandleState(kv));
  return state;
}

/** Reads a session through the handle's cache (see `session_cache.ts` for the staleness bound). */
export function readSessionCached(
  kv: Deno.Kv,
  projectId: string,
  sessionId: string,
): Promise<SessionRecord | null> {
  return kvStateOf(kv).sessions.read(projectId, sessionId);
}

/** Forgets a session in the handle's cache (after a write to it). */
export function forgetSession(kv: Deno.Kv, projectId: string, sessionId: string): void {
  states.get(kv)?.forgetSession(projectId, sessionId);
}

/** The key cache of a KV handle (created on first use). */
export function apiKeyCacheFor(kv: Deno.Kv): ApiKeyCache {
  return kvStateOf(kv).apiKeys;
}

/** The cursor key of the deployment behind `kv` (created on first use). */
export function cursorKeyOf(kv: Deno.Kv, now: number): Promise<CryptoKey> {
  return kvStateOf(kv).cursorKey(now);
}
