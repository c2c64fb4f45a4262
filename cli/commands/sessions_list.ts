/**
 * `sessions list`: the project's sessions, newest first, with the API's filters; one page, every page
 * (`--all`), or one screen refreshed in place (`--watch`).
 *
 * @module
 */
import type { ListSessionsQuery, Session, SessionList } from "@avatar-svc/sdk";
import { API_OPTIONS, clientFromFlags } from "../api_client.ts";
import type { CommandSpec, Values } from "../command.ts";
import { printJson, renderTable } from "../output.ts";
import { printable, printableJson } from "../printable.ts";
import { startProgress } from "../progress.ts";
import { formatAge, parseTimeFlag } from "../time_flag.ts";
import { UsageError } from "../usage_error.ts";
import { watch } from "../watch.ts";
import type { Io } from "../io.ts";
import { SESSION_STATUSES } from "../../src/vocabulary/session_states.ts";
import { PROVIDER_TYPES } from "../../src/providers/definitions/provider_types.ts";
import { isTransportKind, TRANSPORT_KINDS } from "../../src/vocabulary/transports.ts";

/** Most pages `--all` reads (100 sessions each): a bound, not an expected size. */
const MAX_PAGES = 1000;
const HEAD = ["SESSION ID", "STATUS", "AGE", "PROVIDER", "TRANSPORT", "END REASON"];
/** Lines of a watch screen that are not session rows (title, table rules and header, footer). */
const WATCH_CHROME_LINES = 6;

function row(s: Session, now: number): string[] {
  return [
    s.session_id,
    s.status,
    formatAge(s.created_at, now),
    s.provider_type,
    s.transport,
    s.end_reason ?? "-",
  ];
}

/** The query the flags ask for (without limit and cursor). */
function filtersOf(values: Values, now: number): ListSessionsQuery {
  const q: ListSessionsQuery = {};
  const statuses = ((values.status as string[] | undefined) ?? []).flatMap((v) => v.split(",")).map((v) =>
    v.trim()
  );
  for (const s of statuses) {
    if (!(SESSION_STATUSES as readonly string[]).includes(s)) {
      throw new UsageError(
        `--status must be one of ${SESSION_STATUSES.join(", ")} (repeatable, or comma-separated)`,
      );
    }
  }
  if (statuses.length) q.status = [...new Set(statuses)] as ListSessionsQuery["status"];
  const provider = values.provider as string | undefined;
  if (provider !== undefined) {
    if (!(PROVIDER_TYPES as readonly string[]).includes(provider)) {
      throw new UsageError(`--provider must be one of ${PROVIDER_TYPES.join(", ")}`);
    }
    q.provider_type = provider as ListSessionsQuery["provider_type"];
  }
  const transport = values.transport as string | undefined;
  if (transport !== undefined) {
    if (!isTransportKind(transport)) {
      throw new UsageError(`--transport must be one of ${TRANSPORT_KINDS.join(", ")}`);
    }
    q.transport = transport as ListSessionsQuery["transport"];
  }
  const after = values["created-after"] as string | undefined;
  if (after !== undefined) q.created_after = parseTimeFlag("created-after", after, now);
  const before = values["created-before"] as string | undefined;
  if (before !== undefined) q.created_before = parseTimeFlag("created-before", before, now);
  return q;
}

function wholeNumber(values: Values, flag: string, min: number, max: number): number | undefined {
  const v = values[flag] as string | undefined;
  if (v === undefined) return undefined;
  if (!/^\d{1,7}$/.test(v) || +v < min || +v > max) {
    throw new UsageError(`--${flag} must be a whole number in ${min}..${max}`);
  }
  return Number(v);
}

/** A short description of the filters, for the watch screen's title. */
function describe(q: ListSessionsQuery): string {
  const parts: string[] = [];
  if (q.status) parts.push(`status=${q.status.join(",")}`);
  if (q.provider_type) parts.push(`provider=${q.provider_type}`);
  if (q.transport) parts.push(`transport=${q.transport}`);
  if (q.created_after !== undefined) parts.push(`created≥${new Date(q.created_after).toISOString()}`);
  if (q.created_before !== undefined) parts.push(`created<${new Date(q.created_before).toISOString()}`);
  return parts.length ? parts.join(" ") : "all sessions";
}

/** `--watch`: one screen of the newest sessions, redrawn every interval. */
async function watchSessions(
  io: Io,
  values: Values,
  read: (query: ListSessionsQuery, signal: AbortSignal) => Promise<SessionList>,
  filters: ListSessionsQuery,
  limitFlag: number | undefined,
): Promise<number> {
  const interval = values.interval as string | undefined;
  if (
    interval !== undefined && (!/^\d{1,4}(\.\d{1,3})?$/.test(interval) || +interval < 0.5 || +interval > 3600)
  ) {
    throw new UsageError("--interval must be a number of seconds in 0.5..3600");
  }
  const intervalS = interval === undefined ? 2 : Number(interval);
  const count = wholeNumber(values, "count", 1, 1_000_000);
  const json = values.json === true;
  const size = io.stdoutIsTerminal && !json ? io.consoleSize?.() ?? null : null;
  // One screen: as many rows as fit (at most 100 a page), or --limit.
  const fit = size ? Math.max(1, Math.min(100, size.rows - WATCH_CHROME_LINES)) : 100;
  const limit = Math.min(limitFlag ?? (size ? fit : 20), fit);
  return await watch(io, {
    intervalS,
    count,
    inPlace: !json,
    read: (signal) => read({ ...filters, limit }, signal),
    render(data, _rows, failure) {
      const page = data as SessionList | null;
      if (json) return [printableJson(page ?? { data: [], next_cursor: null, error: failure })];
      const now = Date.now();
      const title = `${describe(filters)} — every ${intervalS} s — ${new Date(now).toISOString()}` +
        (io.stdoutIsTerminal ? "  (Ctrl-C to stop)" : "");
      const lines = [printable(title)];
      if (page) {
        lines.push(
          ...renderTable(io, HEAD, page.data.map((s) => row(s, now)), { compact: true }).split("\n"),
        );
        lines.push(
          page.next_cursor
            ? `${page.data.length} newest shown; more match (deno task cli sessions list --all)`
            : `${page.data.length} session(s)`,
        );
      }
      if (failure) lines.push(failure);
      return lines;
    },
  });
}

/** `sessions list`. */
export const sessionsList: CommandSpec = {
  path: ["sessions", "list"],
  summary: "List the project's sessions, newest first (GET /v1/sessions, non-canonical)",
  description:
    "Shows SESSION ID, STATUS, AGE (since created), PROVIDER, TRANSPORT and END REASON, newest first.\n" +
    "Filters combine (AND); --status may repeat (any of them). Times: ISO 8601, Unix epoch ms, or a\n" +
    "duration ago (90s, 15m, 2h, 7d). --watch redraws one screen in place every --interval seconds\n" +
    "until Ctrl-C (or --count refreshes). Needs scope sessions:read.",
  options: [
    {
      name: "status",
      type: "string",
      multiple: true,
      arg: "<status>",
      help: `only these statuses: ${SESSION_STATUSES.join(", ")} (repeatable, or comma-separated)`,
    },
    {
      name: "provider",
      type: "string",
      arg: "<type>",
      help: `only this provider type: ${PROVIDER_TYPES.join(", ")}`,
    },
    {
      name: "transport",
      type: "string",
      arg: "<t>",
      help: `only this transport: ${TRANSPORT_KINDS.join(", ")}`,
    },
    {
      name: "created-after",
      type: "string",
      arg: "<time>",
      help: "only sessions created at or after this time",
    },
    { name: "created-before", type: "string", arg: "<time>", help: "only sessions created before this time" },
    { name: "limit", type: "string", arg: "<n>", help: "sessions per page, 1..100 (default 20)" },
    {
      name: "cursor",
      type: "string",
      arg: "<cursor>",
      help: "continue after a previous page (same filters)",
    },
    { name: "all", type: "boolean", help: "every page (JSON: one {data, next_cursor: null})" },
    { name: "watch", type: "boolean", help: "refresh one screen in place until Ctrl-C, like top" },
    {
      name: "interval",
      type: "string",
      arg: "<s>",
      help: "with --watch: seconds between refreshes, 0.5..3600 (default 2)",
    },
    { name: "count", type: "string", arg: "<n>", help: "with --watch: stop after n refreshes" },
    ...API_OPTIONS,
  ],
  examples: [
    "deno task cli sessions list",
    "deno task cli sessions list --status failed --created-after 1h",
    "deno task cli sessions list --status active --status ending --watch",
    "deno task --quiet cli sessions list --all --json | jq -r '.data[].session_id'",
  ],
  async run({ values }, io) {
    const filters = filtersOf(values, Date.now());
    const limit = wholeNumber(values, "limit", 1, 100);
    const cursor = values.cursor as string | undefined;
    if (values.watch && (values.all || cursor !== undefined)) {
      throw new UsageError("--watch shows the newest sessions: it takes neither --all nor --cursor");
    }
    if (!values.watch && (values.interval !== undefined || values.count !== undefined)) {
      throw new UsageError("--interval and --count go with --watch");
    }
    const client = clientFromFlags(values, io, startProgress(io, "", false).note);
    if (values.watch) {
      return await watchSessions(
        io,
        values,
        (q, signal) => Promise.resolve(client.listSessions(q, { signal })),
        filters,
        limit,
      );
    }
    const query: ListSessionsQuery = { ...filters, ...(cursor ? { cursor } : {}) };
    let page: SessionList;
    if (values.all) {
      const data: Session[] = [];
      let pages = 0;
      for await (const p of client.listSessions({ ...query, limit: 100 })) {
        data.push(...p.data);
        if (++pages >= MAX_PAGES) break;
      }
      page = { data, next_cursor: null };
    } else {
      page = await client.listSessions({ ...query, ...(limit ? { limit } : {}) });
    }
    if (values.json) {
      printJson(io, page);
      return 0;
    }
    const now = Date.now();
    io.stdout(`${renderTable(io, HEAD, page.data.map((s) => row(s, now)), { compact: true })}\n`);
    if (page.next_cursor) io.stdout(`More sessions: --cursor ${printable(page.next_cursor)} (or --all)\n`);
    return 0;
  },
};
