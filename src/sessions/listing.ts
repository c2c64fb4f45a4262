/**
 * The session listing (`GET /v1/sessions`, outside the canonical contract): one page of the caller's
 * project's sessions, newest first, filtered by status, provider type, transport and creation time, read
 * from the listing index (`src/kv/session_index.ts`) — never a scan of the project's sessions.
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import { ApiError } from "../errors.ts";
import { kvOp } from "../kv/guard.ts";
import { cursorKeyOf } from "../kv/handle_state.ts";
import { listSessionIndex } from "../kv/session_index.ts";
import type { ProviderType } from "../providers/definitions/provider_types.ts";
import { type CursorFilters, decodeCursor, encodeCursor } from "./list_cursor.ts";
import type { TransportKind } from "../vocabulary/transports.ts";
import type { SessionStatus } from "../vocabulary/session_states.ts";
import type { SessionList } from "../vocabulary/schemas.ts";

/** Page size when none is asked for. */
export const DEFAULT_LIST_LIMIT = 20;
/** Largest page. */
export const MAX_LIST_LIMIT = 100;

/** A validated listing query. */
export interface ListSessionsQuery {
  /** One or more statuses (any of them). */
  status?: readonly SessionStatus[];
  provider_type?: ProviderType;
  transport?: TransportKind;
  /** Inclusive lower bound of `created_at` (Unix ms). */
  created_after?: number;
  /** Exclusive upper bound of `created_at` (Unix ms). */
  created_before?: number;
  /** 1..100 (default 20). */
  limit?: number;
  /** `next_cursor` of the previous page, with the same filters. */
  cursor?: string;
}

/** Reads one page of `projectId`'s sessions. Throws 400 SVC_INVALID_REQUEST for a cursor that is not one. */
export async function listSessions(
  deps: { kv: Deno.Kv; clock: Clock },
  projectId: string,
  q: ListSessionsQuery,
): Promise<SessionList> {
  const filters: CursorFilters = {
    statuses: q.status?.length ? q.status : null,
    providerType: q.provider_type ?? null,
    transport: q.transport ?? null,
    createdAfter: q.created_after ?? null,
    createdBefore: q.created_before ?? null,
  };
  const limit = q.limit ?? DEFAULT_LIST_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
    throw new ApiError("SVC_INVALID_REQUEST", `query.limit: must be a whole number in 1..${MAX_LIST_LIMIT}`);
  }
  const key = await cursorKeyOf(deps.kv, deps.clock.now());
  const after = q.cursor === undefined ? null : await decodeCursor(key, projectId, filters, q.cursor);
  if (q.cursor !== undefined && !after) {
    throw new ApiError(
      "SVC_INVALID_REQUEST",
      "query.cursor: not a cursor of this listing (altered, issued to another project, or issued for other filters)",
    );
  }
  const page = await kvOp(() =>
    listSessionIndex(deps.kv, projectId, {
      statuses: filters.statuses as SessionStatus[] | null,
      providerType: q.provider_type ?? null,
      transport: q.transport ?? null,
      createdAfter: filters.createdAfter,
      createdBefore: filters.createdBefore,
      limit,
      after,
    })
  );
  return {
    data: page.items,
    next_cursor: page.next ? await encodeCursor(key, projectId, filters, page.next) : null,
  };
}
