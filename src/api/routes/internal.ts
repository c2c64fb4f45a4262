/**
 * The worker's internal API (see `src/fleet/internal_api.ts` for the wire format): start, end and the
 * endpoints of the sessions this worker runs, for API processes. Every call must carry a valid signature
 * made with `SVC_INTERNAL_SECRET` (401 otherwise); these routes are not part of the public API and are left
 * out of the OpenAPI document.
 *
 * @module
 */
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { ApiError } from "../../errors.ts";
import { readOwned } from "../middleware/credential_body.ts";
import { decodeStart, INTERNAL_PATHS } from "../../fleet/internal_api.ts";
import type { InternalAuth } from "../../fleet/internal_auth.ts";
import { isProviderType } from "../../providers/definitions/provider_types.ts";
import { isTransportKind } from "../../vocabulary/transports.ts";
import { isEndReason } from "../../vocabulary/end_reasons.ts";
import { SESSION_ID_PATTERN } from "../../ids.ts";
import type { AppEnv } from "../app_env.ts";
import type { WorkerPort } from "../../fleet/worker_port.ts";

/** Dependencies of the internal routes. */
export interface InternalRouteDeps {
  worker: WorkerPort;
  auth: InternalAuth;
  /** Largest accepted body (the public body limit plus the spec). */
  maxBodyBytes: number;
}

/** Reads a signed body; throws 401 when the signature does not hold, 413 when it is too large. */
async function signedBody(c: Context<AppEnv>, deps: InternalRouteDeps): Promise<Uint8Array<ArrayBuffer>> {
  const declared = Number(c.req.header("content-length") ?? "0");
  if (declared > deps.maxBodyBytes) throw new ApiError("SVC_PAYLOAD_TOO_LARGE");
  // Read into a buffer of this route's own, each chunk zeroed once copied: a start body holds credentials.
  const owned = await readOwned(c.req.raw.body);
  const body = owned.take();
  if (body.length > deps.maxBodyBytes) {
    body.fill(0);
    throw new ApiError("SVC_PAYLOAD_TOO_LARGE");
  }
  const path = new URL(c.req.url).pathname;
  if (!(await deps.auth.verify(c.req.method, path, c.req.raw.headers, body))) {
    body.fill(0);
    throw new ApiError("SVC_AUTH_INVALID_KEY", "The internal request signature is missing or invalid.");
  }
  return body;
}

function sessionRef(body: Uint8Array): { project_id: string; session_id: string; [k: string]: unknown } {
  let v: Record<string, unknown>;
  try {
    v = JSON.parse(new TextDecoder().decode(body));
  } catch {
    throw new ApiError("SVC_INVALID_REQUEST", "The body is not valid JSON.");
  }
  if (
    typeof v?.project_id !== "string" || v.project_id.length > 128 || typeof v.session_id !== "string" ||
    v.session_id.length > 128 || !SESSION_ID_PATTERN.test(v.session_id)
  ) {
    throw new ApiError("SVC_INVALID_REQUEST", "project_id and session_id are required.");
  }
  return v as { project_id: string; session_id: string };
}

/** Registers the internal routes on a worker's app. */
export function registerInternalRoutes(app: OpenAPIHono<AppEnv>, deps: InternalRouteDeps): void {
  app.post(INTERNAL_PATHS.start, async (c) => {
    const body = await signedBody(c, deps);
    let decoded;
    try {
      decoded = decodeStart(body);
    } finally {
      body.fill(0); // the holder has its own copy of the credentials
    }
    if (!decoded) throw new ApiError("SVC_INVALID_REQUEST", "The start request is malformed.");
    const { spec, credentials } = decoded;
    if (
      !isProviderType(spec.providerType) || !isTransportKind(spec.transport) ||
      !SESSION_ID_PATTERN.test(spec.sessionId)
    ) {
      credentials.zero();
      throw new ApiError("SVC_INVALID_REQUEST", "The start request is malformed.");
    }
    return c.json(await deps.worker.start(spec, credentials), 200);
  });

  app.post(INTERNAL_PATHS.end, async (c) => {
    const ref = sessionRef(await signedBody(c, deps));
    const reason = String(ref.reason);
    if (typeof ref.force !== "boolean" || !isEndReason(reason)) {
      throw new ApiError("SVC_INVALID_REQUEST", "force and reason are required.");
    }
    return c.json(await deps.worker.end(ref.project_id, ref.session_id, { force: ref.force, reason }), 200);
  });

  app.post(INTERNAL_PATHS.stream, async (c) => {
    const ref = sessionRef(await signedBody(c, deps));
    return c.json(await deps.worker.stream(ref.project_id, ref.session_id), 200);
  });
}
