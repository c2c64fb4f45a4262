/**
 * The listing index of a project's sessions (`GET /v1/sessions`): secondary entries written in the same
 * atomic operation as the session record, on its creation and on every transition, so the index never
 * disagrees with the records (saaskit's pattern: the record and its indexes land together or not at all).
 *
 * Each session has 8 entries, one per combination of its three facets — status, provider type, transport —
 * each either the session's value or `"*"` (any):
 *
 * ```text
 * ["project", pid, "session_index", status|"*", provider_type|"*", transport|"*", created_at, session_id]
 *   → the session's public view (what GET /v1/sessions/{id} answers)
 * ```
 *
 * so every filter the listing offers is one ordered stream (or, for several statuses, one stream per
 * status, merged). A page reads at most `limit + 1` entries from each stream, newest first, from the cursor's
 * position on: its cost depends on the page size and the number of statuses asked for, never on how many
 * sessions the project has. A transition rewrites the 8 values and moves the 4 status-keyed entries (4
 * deletes, 8 sets: 12 mutations beside the record's own).
 *
 * @module
 */
import { ANY_FACET, sessionIndexKey, sessionIndexPrefix } from "./keys.ts";
import type { ProviderType } from "../providers/types.ts";
import type { ResolvedTransport, SessionRecord } from "../sessions/record.ts";
import { SESSION_STATUSES, type SessionStatus, TERMINAL_STATUSES } from "../sessions/state.ts";
import { type SessionView, toView } from "../sessions/view.ts";

/** The fields of a record its index keys are made of. */
type Indexed = Pick<
  SessionRecord,
  "project_id" | "session_id" | "status" | "provider_type" | "transport" | "created_at"
>;

/** The 8 index keys of a record. */
export function indexKeys(rec: Indexed): Deno.KvKey[] {
  const keys: Deno.KvKey[] = [];
  for (const status of [rec.status, ANY_FACET]) {
    for (const provider of [rec.provider_type, ANY_FACET]) {
      for (const transport of [rec.transport, ANY_FACET]) {
        keys.push(
          sessionIndexKey(rec.project_id, status, provider, transport, rec.created_at, rec.session_id),
        );
      }
    }
  }
  return keys;
}

const keyId = (k: Deno.KvKey) => JSON.stringify(k);

/**
 * Adds the index writes of a record's new state to `op`: `prev` is the state it replaces (null for a new
 * record). Entries of `prev` that `next` no longer has (its old status) are deleted; every entry of `next`
 * is set to its new view, with `expireIn` (the retention of an ended session).
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
  const view = toView(next);
  for (const k of keys) op.set(k, view, expireIn === undefined ? undefined : { expireIn });
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
  transport: ResolvedTransport | null;
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
}

/** Newest first: `created_at` descending, then `session_id` descending (the index's reverse order). */
function newerFirst(a: SessionView, b: SessionView): number {
  return (b.created_at ?? 0) - (a.created_at ?? 0) ||
    (a.session_id < b.session_id ? 1 : a.session_id > b.session_id ? -1 : 0);
}

/** Reads one page of a project's sessions from the index. */
export async function listSessionIndex(kv: Deno.Kv, projectId: string, q: IndexQuery): Promise<IndexPage> {
  const statuses = q.statuses === null || SESSION_STATUSES.every((s) => q.statuses!.includes(s))
    ? [ANY_FACET]
    : [...new Set(q.statuses)];
  const provider = q.providerType ?? ANY_FACET;
  const transport = q.transport ?? ANY_FACET;
  const take = q.limit + 1;
  const streams = await Promise.all(statuses.map(async (status) => {
    const prefix = sessionIndexPrefix(projectId, status, provider, transport);
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
    for await (const e of kv.list<SessionView>(selector, { reverse: true, limit: take, batchSize: take })) {
      out.push(e.value);
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
  };
}
