// @ts-check
/**
 * Paging of `listSessions`: the first page as a promise, every page as an async iterator. Documentation:
 * `session_pages.d.ts`.
 *
 * @module
 */

/** @import { SessionPages, ListSessionsQuery } from "./session_pages.d.ts" */
/** @import { SessionList } from "./types.d.ts" */

/** Most pages one iteration reads: a bound against a service that never ends a listing, not a size. */
const MAX_PAGES = 100_000;

/**
 * The pages of a listing, each read when it is needed.
 * @param {(query: ListSessionsQuery) => Promise<SessionList>} readPage one page of the listing
 * @param {ListSessionsQuery} query the filters (and the cursor to start from, if any)
 * @returns {SessionPages}
 */
export function sessionPages(readPage, query) {
  if (query === null || typeof query !== "object" || Array.isArray(query)) {
    throw new TypeError("query must be an object");
  }
  const filters = { ...query };
  /** @type {Promise<SessionList> | null} */
  let first = null;
  const firstPage = () => (first ??= readPage({ ...filters }));
  return {
    then(onFulfilled, onRejected) {
      return firstPage().then(onFulfilled, onRejected);
    },
    async *[Symbol.asyncIterator]() {
      let page = await firstPage();
      yield page;
      for (let n = 1; page.next_cursor !== null && n < MAX_PAGES; n++) {
        const cursor = page.next_cursor;
        page = await readPage({ ...filters, cursor });
        if (page.next_cursor === cursor) throw new Error("the service answered the same cursor twice");
        yield page;
      }
    },
  };
}
