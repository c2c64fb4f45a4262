/**
 * The process's Deno KV: the handle it opens on `SVC_KV` (or one a test supplies, never closed here), the
 * session records' retention set on it, and, for an API process on a database file it shares, the second
 * handle its read caches read through (`kv/read_handle.ts`), closed after the caches have settled.
 *
 * @module
 */
import type { Config } from "../config.ts";
import { openKv } from "../kv/open.ts";
import { setReadHandle, sharesDatabase } from "../kv/read_handle.ts";
import { setSessionRetention } from "../kv/session_retention.ts";
import type { Cleanup } from "./cleanup.ts";

/** Opens (or takes) the process's KV; registers the closing of what it opened. */
export async function openStorage(
  config: Config,
  supplied: Deno.Kv | undefined,
  cleanup: Cleanup,
): Promise<Deno.Kv> {
  const kv = supplied ?? await openKv(config.kv);
  if (!supplied) cleanup.push(() => kv.close());
  setSessionRetention(kv, config.sessionRetentionMs);
  if (!supplied && config.role !== "worker" && sharesDatabase(config.kv)) {
    // The API's read caches read through a second handle, so they never queue behind this process's
    // writes and their fsyncs (src/kv/read_handle.ts). Closed after the caches have settled.
    const readKv = await openKv(config.kv);
    cleanup.push(() => readKv.close());
    setReadHandle(kv, readKv);
  }
  return kv;
}
