/**
 * The process's Deno KV: the handle it opens on `SVC_KV` (or one a test supplies, never closed here), and the
 * in-memory state this process keeps beside it (`kv/handle_state.ts`), created and owned here: the
 * retention of ended sessions written through it, its read caches, and, for an API process on a database
 * file it shares, the second handle those caches read through (`kv/read_handle.ts`), closed after the caches
 * have settled.
 *
 * @module
 */
import type { Config } from "../config.ts";
import { attachKvState, KvHandleState } from "../kv/handle_state.ts";
import { openKv } from "../kv/open.ts";
import { sharesDatabase } from "../kv/read_handle.ts";
import type { Cleanup } from "./cleanup.ts";

/** Opens (or takes) the process's KV and creates its state; registers the closing of what it opened. */
export async function openStorage(
  config: Config,
  supplied: Deno.Kv | undefined,
  cleanup: Cleanup,
): Promise<Deno.Kv> {
  const kv = supplied ?? await openKv(config.kv);
  if (!supplied) cleanup.push(() => kv.close());
  let read: Deno.Kv | undefined;
  if (!supplied && config.role !== "worker" && sharesDatabase(config.kv)) {
    // The API's read caches read through a second handle, so they never queue behind this process's
    // writes and their fsyncs (src/kv/read_handle.ts). Closed after the caches have settled.
    const readKv = read = await openKv(config.kv);
    cleanup.push(() => readKv.close());
  }
  const state = new KvHandleState(kv, { read, retentionMs: config.sessionRetentionMs });
  const detach = attachKvState(state);
  cleanup.push(async () => {
    await state.settled();
    detach();
  });
  return kv;
}
