/**
 * `GET /v1/sessions` (non-canonical): one page of the caller's project's sessions, newest first, with
 * filters and an opaque cursor. The page is read from the listing index (see `src/sessions/listing.ts`).
 *
 * @module
 */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Clock } from "../../clock.ts";
import { PROVIDER_TYPES } from "../../providers/definitions/provider_types.ts";
import { TRANSPORT_KINDS } from "../../vocabulary/transports.ts";
import { DEFAULT_LIST_LIMIT, listSessions, MAX_LIST_LIMIT } from "../../sessions/listing.ts";
import { SESSION_STATUSES } from "../../vocabulary/session_states.ts";
import type { AppEnv } from "../app_env.ts";
import { requireScope } from "../middleware/auth.ts";
import { API_KEY_SECURITY, COMMON_ERRORS, errorResponses, jsonResponse } from "../openapi_helpers.ts";
import { SessionList } from "../../vocabulary/schemas.ts";

/** Epoch milliseconds given as digits in the query. */
const epochParam = (name: string, description: string) =>
  z.string().regex(/^\d{1,16}$/, "must be Unix epoch milliseconds (digits)").transform(Number)
    .pipe(z.number().int().min(0).max(8_640_000_000_000_000)).optional().openapi({
      param: { name, in: "query" },
      type: "integer",
      format: "int64",
      description,
    });

/** The listing's query: every parameter optional; unknown parameters are refused (400). */
export const ListSessionsQuerySchema = z.strictObject({
  // Repeated (`status=active&status=ending`) or comma-separated (`status=active,ending`).
  status: z.union([z.string().max(200), z.array(z.string().max(200)).max(20)])
    .transform((v) => (Array.isArray(v) ? v : [v]).flatMap((s) => s.split(",")).map((s) => s.trim()))
    .pipe(z.array(z.enum(SESSION_STATUSES)).min(1).max(SESSION_STATUSES.length * 2))
    .optional()
    .openapi({
      param: { name: "status", in: "query", style: "form", explode: true },
      type: "array",
      items: { type: "string", enum: [...SESSION_STATUSES] },
      description:
        "Only sessions in one of these statuses. Repeat the parameter (`status=active&status=ending`) or separate values with commas. Unknown statuses answer 400.",
    }),
  provider_type: z.enum(PROVIDER_TYPES).optional().openapi({
    param: { name: "provider_type", in: "query" },
    description: "Only sessions of this provider type.",
  }),
  transport: z.enum(TRANSPORT_KINDS).optional().openapi({
    param: { name: "transport", in: "query" },
    description: "Only sessions running on this transport (the resolved one: `auto` is never stored).",
  }),
  created_after: epochParam("created_after", "Only sessions created at or after this time (inclusive)."),
  created_before: epochParam("created_before", "Only sessions created before this time (exclusive)."),
  limit: z.string().regex(/^\d{1,3}$/, "must be a whole number").transform(Number)
    .pipe(z.number().int().min(1).max(MAX_LIST_LIMIT)).optional().openapi({
      param: { name: "limit", in: "query" },
      type: "integer",
      minimum: 1,
      maximum: MAX_LIST_LIMIT,
      description: `Page size, 1..${MAX_LIST_LIMIT} (default ${DEFAULT_LIST_LIMIT}).`,
    }),
  cursor: z.string().min(1).max(512).optional().openapi({
    param: { name: "cursor", in: "query" },
    description:
      "`next_cursor` of the previous page, with the same filters. Opaque; a cursor that was altered, issued to another project or issued for other filters answers 400.",
  }),
});

const listSessionsRoute = createRoute({
  method: "get",
  path: "/v1/sessions",
  operationId: "listSessions",
  tags: ["Sessions"],
  summary: "List sessions (non-canonical)",
  description:
    "Non-canonical: not part of the interface specification; integrations must not depend on it. One page of the project's sessions, newest first, optionally filtered by status (one or more), provider type, transport and creation time. Only the caller's project's sessions are ever listed. Ended sessions are kept `SVC_SESSION_RETENTION_DAYS` (default 30) after they end (see docs/api.md#listing-sessions). Scope: `sessions:read`.",
  security: API_KEY_SECURITY,
  middleware: [requireScope("sessions:read")] as const,
  request: { query: ListSessionsQuerySchema },
  responses: {
    200: jsonResponse(SessionList, "One page of sessions."),
    ...errorResponses([...COMMON_ERRORS, "SVC_INVALID_REQUEST"]),
  },
});

/** Registers `GET /v1/sessions`. */
export function registerSessionListRoute(
  app: OpenAPIHono<AppEnv>,
  deps: { kv: Deno.Kv; clock: Clock },
): void {
  app.openapi(listSessionsRoute, async (c) => {
    const caller = c.get("caller")!;
    return c.json(await listSessions(deps, caller.projectId, c.req.valid("query")), 200);
  });
}
