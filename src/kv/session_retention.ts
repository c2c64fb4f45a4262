/**
 * How long an ended session's record and its listing entries are kept (`SVC_SESSION_RETENTION_DAYS`). The
 * transition into a terminal status writes them with this `expireIn`; Deno KV deletes them no earlier than
 * that (its expiry is a lower bound: they may stay visible a little longer). Live sessions never expire.
 *
 * Held in the KV handle's state (`handle_state.ts`), like the read handle: the composition root creates
 * that state with it, and every module that writes session records reads it from the handle it writes
 * through.
 *
 * @module
 */

import { DEFAULT_SESSION_RETENTION_MS, kvStateOf } from "./handle_state.ts";

export { DEFAULT_SESSION_RETENTION_MS };

/** Sets the retention of ended sessions written through `kv`, in ms; null keeps them forever. */
export function setSessionRetention(kv: Deno.Kv, ms: number | null): void {
  kvStateOf(kv).retentionMs = ms;
}

/** The `expireIn` of ended sessions written through `kv` (undefined: kept forever). */
export function sessionRetentionOf(kv: Deno.Kv): number | undefined {
  return kvStateOf(kv).retentionMs ?? undefined;
}
