/**
 * How long an ended session's record and its listing entries are kept (`SVC_SESSION_RETENTION_DAYS`). The
 * transition into a terminal status writes them with this `expireIn`; Deno KV deletes them no earlier than
 * that (its expiry is a lower bound: they may stay visible a little longer). Live sessions never expire.
 *
 * Held per KV handle, like the read handle (`read_handle.ts`): the composition root sets it once, and
 * every module that writes session records reads it from the handle it writes through.
 *
 * @module
 */

/** The default retention of ended sessions: 30 days. */
export const DEFAULT_SESSION_RETENTION_MS = 30 * 24 * 3600_000;

const retention = new WeakMap<Deno.Kv, number | null>();

/** Sets the retention of ended sessions written through `kv`, in ms; null keeps them forever. */
export function setSessionRetention(kv: Deno.Kv, ms: number | null): void {
  retention.set(kv, ms);
}

/** The `expireIn` of ended sessions written through `kv` (undefined: kept forever). */
export function sessionRetentionOf(kv: Deno.Kv): number | undefined {
  const ms = retention.has(kv) ? retention.get(kv) : DEFAULT_SESSION_RETENTION_MS;
  return ms ?? undefined;
}
