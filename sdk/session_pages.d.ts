/**
 * Paging of {@link import("./client.d.ts").Client.listSessions}.
 *
 * @module
 */
import type { operations } from "./schema.d.ts";
import type { SessionList } from "./types.d.ts";

/**
 * Filters of `listSessions` (`GET /v1/sessions`): `status` (one or more), `provider_type`, `transport`,
 * `created_after` (inclusive) and `created_before` (exclusive, Unix ms), `limit` (1..100, default 20) and
 * `cursor` (a page's `next_cursor`, to start from there).
 */
export type ListSessionsQuery = NonNullable<operations["listSessions"]["parameters"]["query"]>;

/**
 * The pages of one listing. Await it for the first page; iterate it (`for await`) for every page, each
 * read when the loop asks for it (the filters stay the same; the cursor moves on). Pages are newest first;
 * a session created while you iterate is never listed twice, nor does it push an older one out.
 *
 * @example Every active session, 100 at a time
 * ```ts
 * import { createClient } from "@avatar-svc/sdk";
 *
 * const svc = createClient({ baseUrl: "https://avatar.example.com", apiKey: "svc_sk_…" });
 * for await (const page of svc.listSessions({ status: ["active"], limit: 100 })) {
 *   for (const s of page.data) console.log(s.session_id, s.provider_type);
 * }
 * ```
 * @example Only the first page
 * ```ts
 * import { createClient } from "@avatar-svc/sdk";
 *
 * const svc = createClient({ baseUrl: "https://avatar.example.com", apiKey: "svc_sk_…" });
 * const { data, next_cursor } = await svc.listSessions({ status: ["failed"] });
 * console.log(data.length, next_cursor);
 * ```
 */
export interface SessionPages extends PromiseLike<SessionList>, AsyncIterable<SessionList> {}

/** Builds the pages of a listing from a function that reads one page. */
export declare function sessionPages(
  readPage: (query: ListSessionsQuery) => Promise<SessionList>,
  query: ListSessionsQuery,
): SessionPages;
