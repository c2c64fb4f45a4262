/**
 * Owner leases, the registry of live service processes: each process (instance) holds one lease in KV
 * and renews it while it runs, saying what it is (`role`) and, for a session host, where API processes reach
 * it (`worker`: its internal URL, public URL, capacity and free slots, signed with the internal secret). The
 * live sessions a worker runs are indexed under it (`["owned_session", instance, pid, sid]`, written and
 * removed in the same atomic operations that create and finish the sessions). A lease whose `expires_at`
 * has passed belongs to a process that is gone: its sessions are reaped (see `src/fleet/reaper.ts`).
 *
 * @module
 */
import type { Role } from "../config.ts";
import type { TransportKind } from "../vocabulary/transports.ts";
import { casLoop, kvOp } from "./guard.ts";
import { ownedSessionKey, ownedSessionPrefix, ownerLeaseKey, ownerLeasePrefix } from "./keys.ts";

/** How long a reaped lease's tombstone is kept (it still lets late index entries be found and reaped). */
export const TOMBSTONE_RETENTION_MS = 24 * 3600_000;

/** How API processes reach a session host. */
export interface WorkerAdvert {
  /** `SVC_WORKER_URL`: where API processes call it (null: not reachable by other processes). */
  url: string | null;
  /** `SVC_PUBLIC_URL`: where clients reach its media. */
  public_url: string;
  /** Sessions it accepts at once. */
  capacity: number;
  /** Capacity minus the sessions it runs now (at the last renewal; placement counts exactly in KV). */
  free_slots: number;
  /** The transports it serves (absent in older registrations: `websocket_fmp4` only). */
  transports?: TransportKind[];
  /** HMAC of its id and addresses with the internal secret (see `src/fleet/internal_auth.ts`). */
  signature: string | null;
}

/** A process's lease. */
export interface OwnerLease {
  instance_id: string;
  /** Process id and host name, for operators. */
  pid: number;
  hostname: string;
  acquired_at: number;
  /** Last renewal: the last moment the owner was known to be alive. */
  renewed_at: number;
  expires_at: number;
  /** Set when another process reaped the sessions of this (expired) lease. */
  reaped_at: number | null;
  /** What the process is (leases written before roles existed have none: read as `all`). */
  role?: Role;
  /** Set for processes that run sessions. */
  worker?: WorkerAdvert | null;
}

/** Outcome of a renewal. */
export type RenewOutcome = "renewed" | "reaped";

/**
 * Takes or renews the lease of `instanceId` until `now + ttlMs`. Answers `"reaped"` (and re-acquires a
 * fresh lease) when another process found the lease expired and reaped it: the caller must then end the
 * sessions it still runs, since their records are already final.
 */
export async function renewOwnerLease(
  kv: Deno.Kv,
  instanceId: string,
  now: number,
  ttlMs: number,
  about: { pid: number; hostname: string; role?: Role; worker?: WorkerAdvert | null },
): Promise<RenewOutcome> {
  return await kvOp(async () => {
    let outcome: RenewOutcome = "renewed";
    await casLoop(async () => {
      const entry = await kv.get<OwnerLease>(ownerLeaseKey(instanceId));
      outcome = entry.value?.reaped_at ? "reaped" : "renewed";
      const lease: OwnerLease = {
        instance_id: instanceId,
        pid: about.pid,
        hostname: about.hostname,
        acquired_at: entry.value && !entry.value.reaped_at ? entry.value.acquired_at : now,
        renewed_at: now,
        expires_at: now + ttlMs,
        reaped_at: null,
        role: about.role ?? "all",
        worker: about.worker ?? null,
      };
      return (await kv.atomic().check(entry).set(ownerLeaseKey(instanceId), lease).commit()).ok;
    });
    return outcome;
  });
}

/**
 * Gives the lease up at a clean shutdown. With no session left under it the lease is deleted; otherwise
 * it is expired now, so that any process reaps what is left at once.
 */
export async function releaseOwnerLease(kv: Deno.Kv, instanceId: string, now: number): Promise<void> {
  await kvOp(async () => {
    await casLoop(async () => {
      const entry = await kv.get<OwnerLease>(ownerLeaseKey(instanceId));
      if (!entry.value) return true;
      const left = await listOwnedSessions(kv, instanceId, 1);
      const op = kv.atomic().check(entry);
      if (left.length === 0) op.delete(ownerLeaseKey(instanceId));
      else op.set(ownerLeaseKey(instanceId), { ...entry.value, expires_at: now });
      return (await op.commit()).ok;
    });
  });
}

/** Every lease (live, expired and tombstones). */
export async function listOwnerLeases(kv: Deno.Kv): Promise<Deno.KvEntry<OwnerLease>[]> {
  return await kvOp(async () => {
    const out: Deno.KvEntry<OwnerLease>[] = [];
    for await (const e of kv.list<OwnerLease>({ prefix: ownerLeasePrefix })) out.push(e);
    return out;
  });
}

/** The leases that have not expired (their processes are alive), optionally of processes running sessions. */
export async function listLiveInstances(
  kv: Deno.Kv,
  now: number,
  options: { workers?: boolean } = {},
): Promise<OwnerLease[]> {
  const out: OwnerLease[] = [];
  for (const e of await listOwnerLeases(kv)) {
    const l = e.value;
    if (l.reaped_at !== null || l.expires_at <= now) continue;
    if (options.workers && !l.worker) continue;
    out.push(l);
  }
  return out;
}

/** Whether a lease's process serves the API: role `all` or `api` (no role: a lease written before roles, read as `all`). */
export function servesApi(lease: OwnerLease): boolean {
  return lease.role === undefined || lease.role === "all" || lease.role === "api";
}

/** Up to `limit` live sessions indexed under an instance. */
export async function listOwnedSessions(
  kv: Deno.Kv,
  instanceId: string,
  limit = 1000,
): Promise<{ projectId: string; sessionId: string }[]> {
  return await kvOp(async () => {
    const out: { projectId: string; sessionId: string }[] = [];
    for await (const e of kv.list({ prefix: ownedSessionPrefix(instanceId) }, { limit })) {
      out.push({ projectId: String(e.key[2]), sessionId: String(e.key[3]) });
    }
    return out;
  });
}

/**
 * Removes one session from an instance's index of owned sessions: a stale entry whose session record is gone
 * or no longer placed there (it is normally removed with the session's final transition).
 */
export async function removeOwnedSession(
  kv: Deno.Kv,
  instanceId: string,
  projectId: string,
  sessionId: string,
): Promise<void> {
  await kvOp(() => kv.delete(ownedSessionKey(instanceId, projectId, sessionId)));
}

/**
 * Marks an expired lease as reaped (a tombstone kept for {@link TOMBSTONE_RETENTION_MS}), or deletes a
 * tombstone that is past its retention and has no session left. Compare-and-set on the lease entry.
 */
export async function markLeaseReaped(
  kv: Deno.Kv,
  entry: Deno.KvEntry<OwnerLease>,
  now: number,
): Promise<boolean> {
  return await kvOp(async () => {
    const lease = entry.value;
    const op = kv.atomic().check(entry);
    if (lease.reaped_at !== null && now - lease.reaped_at > TOMBSTONE_RETENTION_MS) {
      op.delete(entry.key);
    } else {
      op.set(entry.key, { ...lease, reaped_at: lease.reaped_at ?? now });
    }
    return (await op.commit()).ok;
  });
}
