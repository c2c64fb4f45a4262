/**
 * Requests whose method no route serves, answered before anything reads or rebuilds them: `405
 * SVC_METHOD_NOT_ALLOWED` (with `Allow`) on a path that routes serve with other methods, `404
 * SVC_ROUTE_NOT_FOUND` on a path no route has, both with the flat error body.
 *
 * Methods are case-sensitive (RFC 9110 §9.1): `get` is not `GET`. Deno's `Request` normalises `get`/`post`
 * to upper case and refuses forbidden methods (`TRACE`, `TRACK`, `CONNECT`) when a request is rebuilt, so
 * such requests used to fail inside the body bound with 500; here they never get that far. Requests of a
 * method some route serves go on untouched (an unknown path then answers 404 after authentication, as
 * before).
 *
 * @module
 */
import type { MiddlewareHandler } from "hono";
import { ApiError } from "../../errors.ts";
import { errorResponse } from "../error_handler.ts";
import type { AppEnv } from "../app_env.ts";

/** A route as Hono lists it (`app.routes`). */
export interface RouteEntry {
  method: string;
  path: string;
}

interface Compiled {
  /** Every method some route serves. */
  methods: Set<string>;
  /** Static route paths and the methods served there (one map lookup for most requests). */
  exact: Map<string, Set<string>>;
  /** Route paths with parameters or wildcards, as patterns. */
  dynamic: { pattern: RegExp; methods: Set<string> }[];
}

/** A route path (`/v1/sessions/:session_id`, `/docs/*`) as a regular expression of whole paths. */
function pathPattern(path: string): RegExp {
  const source = path.split("/").map((segment) => {
    if (segment === "*") return ".*";
    if (segment.startsWith(":")) return "[^/]+";
    return segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  }).join("/");
  return new RegExp(`^${source}$`);
}

function compile(routes: readonly RouteEntry[]): Compiled {
  const byPath = new Map<string, Set<string>>();
  for (const r of routes) {
    if (r.method === "ALL") continue; // middleware
    const methods = byPath.get(r.path) ?? new Set<string>();
    methods.add(r.method);
    // Hono answers HEAD with its GET route.
    if (r.method === "GET") methods.add("HEAD");
    byPath.set(r.path, methods);
  }
  const methods = new Set<string>();
  const exact = new Map<string, Set<string>>();
  const dynamic: Compiled["dynamic"] = [];
  for (const [path, m] of byPath) {
    for (const x of m) methods.add(x);
    if (/[:*]/.test(path)) dynamic.push({ pattern: pathPattern(path), methods: m });
    else exact.set(path, m);
  }
  return { methods, exact, dynamic };
}

/** Guards methods against the app's routes (read on the first request, once every route is registered). */
export function methodGuard(routes: () => readonly RouteEntry[], docsUrl: string): MiddlewareHandler<AppEnv> {
  let compiled: Compiled | null = null;
  return function methodGuard(c, next) {
    compiled ??= compile(routes());
    const method = c.req.raw.method;
    const path = c.req.path;
    let allowed: Set<string> | null = null;
    const exact = compiled.exact.get(path);
    if (exact) {
      if (exact.has(method)) return next();
      allowed = new Set(exact);
    }
    for (const p of compiled.dynamic) {
      if (!p.pattern.test(path)) continue;
      if (p.methods.has(method)) return next();
      allowed ??= new Set();
      for (const m of p.methods) allowed.add(m);
    }
    if (allowed) {
      const res = errorResponse(c, new ApiError("SVC_METHOD_NOT_ALLOWED"), docsUrl);
      res.headers.set("Allow", [...allowed].sort().join(", "));
      return Promise.resolve(res);
    }
    // An unknown path: a method no route serves anywhere is answered here; others go on to the 404.
    if (!compiled.methods.has(method)) {
      return Promise.resolve(errorResponse(c, new ApiError("SVC_ROUTE_NOT_FOUND"), docsUrl));
    }
    return next();
  };
}
