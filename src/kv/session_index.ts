/**
 * The listing index of a project's sessions (`GET /v1/sessions`): secondary entries written in the same
 * atomic operation as the session record, on its creation and on every transition, so the index never
 * disagrees with the records (saaskit's pattern: the record and its indexes land together or not at all).
 *
 * Each session has 4 entries, keyed by its facets — status, provider type, transport — or `"*"` (any):
 *
 * ```text
 * ["project", pid, "session_index", status, provider_type, transport, created_at, session_id]
 * ["project", pid, "session_index", status, "*",           "*",       created_at, session_id]
 * ["project", pid, "session_index", "*",    provider_type, transport, created_at, session_id]
 * ["project", pid, "session_index", "*",    "*",           "*",       created_at, session_id]
 *   → [status, provider_type, transport, started_at, ended_at, end_reason]  (with the key: the public view)
 * ```
 *
 * Each filter of the listing reads a few of these streams, newest first, from the cursor's position on, and
 * merges them: no filter, one stream; statuses only, one per status; provider type and/or transport (with or
 * without statuses), one per combination of the values asked for and the values of the facet not asked for
 * (at most 4 per status: 4 provider types × 1 transport). A page reads at most `limit + 1` entries of each
 * stream: its cost depends on the page size and the filters, never on how many sessions the project has had.
 * A transition moves the 2 status-keyed entries and rewrites the other 2 (2 deletes, 4 sets beside the
 * record). The value is the fields that change, in a compact array; the rest of the view is in the key.
 *
 * @module
 */
import { ANY_FACET, sessionIndexKey, sessionIndexPrefix } from "./keys.ts";
import { PROVIDER_TYPES, type ProviderType } from "../providers/definitions/provider_types.ts";
import type { SessionRecord } from "../vocabulary/session_record.ts";
import { TRANSPORT_KINDS, type TransportKind } from "../vocabulary/transports.ts";
import { SESSION_STATUSES, type SessionStatus, TERMINAL_STATUSES } from "../vocabulary/session_states.ts";
import type { EndReason } from "../vocabulary/end_reasons.ts";
import type { SessionView } from "../vocabulary/schemas.ts";

/** The fields of a record its index keys are made of. */
type Indexed = Pick<
  SessionRecord,
  "project_id" | "session_id" | "status" | "provider_type" | "transport" | "created_at"
>;

/** An entry's value: what changes over a session's life, plus its provider type and transport. */
export type IndexValue = [
  SessionStatus,
  ProviderType,
  TransportKind,
  number | null,
  number | null,
  EndReason | null,
];

/** The 4 index keys of a record. */
export function indexKeys(rec: Indexed): Deno.KvKey[] {
  const key = (s: string, p: string, t: string) =>
    sessionIndexKey(rec.project_id, s, p, t, rec.created_at, rec.session_id);
  return [
    key(rec.status, rec.provider_type, rec.transport),
    key(rec.status, ANY_FACET, ANY_FACET),
    key(ANY_FACET, rec.provider_type, rec.transport),
    key(ANY_FACET, ANY_FACET, ANY_FACET),
  ];
}

/** The value of a record's entries. */
export function indexValue(rec: SessionRecord): IndexValue {
  return [rec.status, rec.provider_type, rec.transport, rec.started_at, rec.ended_at, rec.end_reason];
}

/** The public view an entry stands for (what `GET /v1/sessions/{id}` answers for the session). */
export function viewOf(key: Deno.KvKey, value: IndexValue): SessionView {
  const [status, provider, transport, startedAt, endedAt, endReason] = value;
  return {
    session_id: key[7] as string,
    status,
    provider_type: provider,
    transport,
    created_at: key[6] as number,
    ...(startedAt !== null ? { started_at: startedAt } : {}),
    ...(endedAt !== null ? { ended_at: endedAt } : {}),
    ...(endReason !== null ? { end_reason: endReason } : {}),
  };
}

const keyId = (k: Deno.KvKey) => JSON.stringify(k);

/**
 * Adds the index writes of a record's new state to `op`: `prev` is the state it replaces (null for a new
 * record). Entries of `prev` that `next` no longer has (its old status) are deleted; every entry of `next`
 * is set to its new value, with `expireIn` (the retention of an ended session).
 */
export function addIndexToOp(
  op: Deno.AtomicOperation,
  prev: Indexed | null,
  next: SessionRecord,
  expireIn?: number,
): void {
  const keys = indexKeys(next);
  if (prev) {
    const kept = new Set(keys.map(keyId));
    for (const k of indexKeys(prev)) if (!kept.has(keyId(k))) op.delete(k);
  }
  const value = indexValue(next);
  for (const k of keys) op.set(k, value, expireIn === undefined ? undefined : { expireIn });
}

/** The `expireIn` of a record in `status` (terminal ones are kept for `retentionMs`). */
export function expiryOf(status: SessionStatus, retentionMs: number | undefined): number | undefined {
  return TERMINAL_STATUSES.includes(status) ? retentionMs : undefined;
}

/** A position in the listing order: the last item of a page. */
export interface ListPosition {
  createdAt: number;
  sessionId: string;
}

/** What a page asks for. */
export interface IndexQuery {
  /** Statuses to include (null: all). */
  statuses: readonly SessionStatus[] | null;
  providerType: ProviderType | null;
  transport: TransportKind | null;
  /** Inclusive lower bound of `created_at`. */
  createdAfter: number | null;
  /** Exclusive upper bound of `created_at`. */
  createdBefore: number | null;
  /** Items on the page (1..100). */
  limit: number;
  /** Continue after this position (exclusive). */
  after: ListPosition | null;
}

/** One page. */
export interface IndexPage {
  /** Newest first (by `created_at`, then `session_id`, both descending). */
  items: SessionView[];
  /** The position of the last item when more follow, else null. */
  next: ListPosition | null;
  /** Index entries read for the page (for the bench). */
  entriesRead: number;
  /** Streams read for the page. */
  streams: number;
}

/** The streams (status, provider, transport facets) a query reads. */
export function streamsOf(
  q: Pick<IndexQuery, "statuses" | "providerType" | "transport">,
): [string, string, string][] {
  const statuses: string[] = q.statuses === null || SESSION_STATUSES.every((s) => q.statuses!.includes(s))
    ? [ANY_FACET]
    : [...new Set(q.statuses)];
  if (q.providerType === null && q.transport === null) return statuses.map((s) => [s, ANY_FACET, ANY_FACET]);
  const providers = q.providerType !== null ? [q.providerType] : PROVIDER_TYPES;
  const transports = q.transport !== null ? [q.transport] : TRANSPORT_KINDS;
  const out: [string, string, string][] = [];
  for (const s of statuses) for (const p of providers) for (const t of transports) out.push([s, p, t]);
  return out;
}

/** Newest first: `created_at` descending, then `session_id` descending (the index's reverse order). */
function newerFirst(a: SessionView, b: SessionView): number {
  return (b.created_at ?? 0) - (a.created_at ?? 0) ||
    (a.session_id < b.session_id ? 1 : a.session_id > b.session_id ? -1 : 0);
}

/** Reads one page of a project's sessions from the index. */
export async function listSessionIndex(kv: Deno.Kv, projectId: string, q: IndexQuery): Promise<IndexPage> {
  const take = q.limit + 1;
  const facets = streamsOf(q);
  const streams = await Promise.all(facets.map(async ([s, p, t]) => {
    const prefix = sessionIndexPrefix(projectId, s, p, t);
    let end: Deno.KvKey | undefined = q.createdBefore === null ? undefined : [...prefix, q.createdBefore];
    if (q.after && (q.createdBefore === null || q.after.createdAt < q.createdBefore)) {
      end = [...prefix, q.after.createdAt, q.after.sessionId];
    }
    const start: Deno.KvKey | undefined = q.createdAfter === null ? undefined : [...prefix, q.createdAfter];
    const selector: Deno.KvListSelector = start && end
      ? { start, end }
      : start
      ? { prefix, start }
      : end
      ? { prefix, end }
      : { prefix };
    const out: SessionView[] = [];
    // One batch: the stream is read in one snapshot.
    for await (const e of kv.list<IndexValue>(selector, { reverse: true, limit: take, batchSize: take })) {
      out.push(viewOf(e.key, e.value));
    }
    return out;
  }));
  const entriesRead = streams.reduce((n, s) => n + s.length, 0);
  // A session that changed status between two streams' reads may be in both: keep its later status.
  const byId = new Map<string, SessionView>();
  for (const item of streams.flat()) {
    const seen = byId.get(item.session_id);
    if (!seen || SESSION_STATUSES.indexOf(item.status) > SESSION_STATUSES.indexOf(seen.status)) {
      byId.set(item.session_id, item);
    }
  }
  const merged = [...byId.values()].sort(newerFirst);
  const items = merged.slice(0, q.limit);
  const last = items.at(-1);
  return {
    items,
    next: merged.length > q.limit && last
      ? { createdAt: last.created_at ?? 0, sessionId: last.session_id }
      : null,
    entriesRead,
    streams: facets.length,
  };
}
