/**
 * A second handle on the same database for the reads that answer requests from memory with bounded
 * staleness: the session read cache (`session_cache.ts`) and the API-key cache (`api_key_cache.ts`).
 *
 * Deno KV on a local file runs every operation of one handle on one SQLite connection, one after the
 * other: a read queues behind a write of the same handle, and a write waits for its fsync, which took
 * 1 ms at the median and up to 37-80 ms on this project's VM (measured: reads every ms with a write every
 * 20 ms, one handle: p99 0.9 ms, max 34-80 ms; a second handle for the reads: p99 0.4 ms, max 1.8-5.9 ms).
 * Every request waiting on a shared cache fill waited with it, so one slow fsync of a lease renewal or a
 * rate-limit record stalled all GETs of a session (p99 of 36 ms under 50 connections). On a second handle
 * (a second connection; SQLite's WAL lets it read while the first writes) the caches' reads no longer wait
 * for this process's writes.
 *
 * Coherence is unchanged: a read transaction that starts after a commit sees it, whichever connection
 * committed (the caches forget a session after each write through the main handle, so the next read,
 * through this one, starts after the commit). Only file and KV Connect locations get a second handle; an
 * in-memory database is one per handle, so its caches read through the main handle.
 *
 * @module
 */
import { kvStateOf } from "./handle_state.ts";

/**
 * Makes `read` the handle the read caches of `kv` read through (both on one database), in the handle's
 * state (`handle_state.ts`). Call it before the caches of `kv` are first used: they take their handle when
 * created. (The composition root gives it to the state it creates: `app/storage.ts`.)
 */
export function setReadHandle(kv: Deno.Kv, read: Deno.Kv): void {
  kvStateOf(kv).read = read;
}

/** The handle the read caches of `kv` read through: its read handle, or `kv` itself. */
export function readHandleOf(kv: Deno.Kv): Deno.Kv {
  return kvStateOf(kv).read;
}

/** Whether a second handle on `location` reaches the same database (not for `:memory:`). */
export function sharesDatabase(location: string | null): boolean {
  return location !== ":memory:";
}
