/**
 * Calls a remote worker's internal API (`SVC_ROLE=api`): signed requests to the worker's
 * `SVC_WORKER_URL`, errors mapped back to the service's codes.
 *
 * @module
 */
import { ApiError, ERROR_CATALOG, type ErrorCode } from "../errors.ts";
import type { Logger } from "../log.ts";
import type { CredentialHolder } from "../auth/credential_holder.ts";
import type { SessionRecord } from "../vocabulary/session_record.ts";
import { encodeStart, INTERNAL_PATHS } from "./internal_api.ts";
import type { InternalAuth } from "./internal_auth.ts";
import type { EndOptions, StartSpec } from "../vocabulary/host_requests.ts";
import type { EndedSession, StreamEndpoints } from "../vocabulary/schemas.ts";

/** A worker that could not be reached at all (nothing was delivered to it). */
export class WorkerUnreachableError extends Error {
  override name = "WorkerUnreachableError";
}

/** Options of the client. */
export interface RemoteWorkerClientDeps {
  auth: InternalAuth;
  logger: Logger;
  /** HTTP client for https worker URLs signed by a private CA (`SVC_WORKER_CA_FILE`). */
  httpClient?: Deno.HttpClient;
  /** Deadline of a start call (engine handshake + first frame + margin). */
  startTimeoutMs: number;
  /** Deadline of an end call (teardown timeout + margin). */
  endTimeoutMs: number;
  /** Deadline of other calls. */
  callTimeoutMs?: number;
}

/** Messages of a fetch that failed before the request reached the worker. */
const NOT_DELIVERED =
  /connection refused|os error 111|dns error|failed to lookup|name or service|no route to host|network is unreachable/i;

/** Calls workers. */
export class RemoteWorkerClient {
  constructor(readonly deps: RemoteWorkerClientDeps) {}

  /** Starts a session on the worker at `url`; the credentials are zeroed here whatever happens. */
  async start(url: string, spec: StartSpec, credentials: CredentialHolder): Promise<StreamEndpoints> {
    let body: Uint8Array<ArrayBuffer> | null = null;
    try {
      body = await credentials.lend((bytes) => Promise.resolve(encodeStart(spec, bytes)));
      credentials.zero();
      return await this.#call<StreamEndpoints>(url, INTERNAL_PATHS.start, body, this.deps.startTimeoutMs, {
        contentType: "application/octet-stream",
        onTimeout: () =>
          new ApiError("SVC_RENDER_TIMEOUT", "The session host did not finish starting the session in time."),
        onDropped: () =>
          new ApiError("SVC_RENDER_CAPACITY", "The session host stopped while starting the session; retry."),
      });
    } finally {
      credentials.zero();
      body?.fill(0);
    }
  }

  /** Ends a session on its worker. */
  async end(url: string, record: SessionRecord, options: EndOptions): Promise<EndedSession> {
    const body = new TextEncoder().encode(JSON.stringify({
      project_id: record.project_id,
      session_id: record.session_id,
      force: options.force,
      reason: options.reason,
    }));
    return await this.#call<EndedSession>(url, INTERNAL_PATHS.end, body, this.deps.endTimeoutMs, {
      contentType: "application/json",
      onTimeout: () => new ApiError("SVC_SESSION_STATE_UNAVAILABLE"),
      onDropped: () => new ApiError("SVC_SESSION_STATE_UNAVAILABLE"),
    });
  }

  /** The endpoints of an active session on its worker. */
  async stream(url: string, record: SessionRecord): Promise<StreamEndpoints> {
    const body = new TextEncoder().encode(JSON.stringify({
      project_id: record.project_id,
      session_id: record.session_id,
    }));
    return await this.#call<StreamEndpoints>(
      url,
      INTERNAL_PATHS.stream,
      body,
      this.deps.callTimeoutMs ?? 5000,
      {
        contentType: "application/json",
        onTimeout: () => new ApiError("SVC_SESSION_STATE_UNAVAILABLE"),
        onDropped: () => new ApiError("SVC_SESSION_STATE_UNAVAILABLE"),
      },
    );
  }

  async #call<T>(
    base: string,
    path: string,
    body: Uint8Array<ArrayBuffer>,
    timeoutMs: number,
    o: { contentType: string; onTimeout: () => ApiError; onDropped: () => ApiError },
  ): Promise<T> {
    const headers = { "content-type": o.contentType, ...(await this.deps.auth.sign("POST", path, body)) };
    const signal = AbortSignal.timeout(timeoutMs);
    let res: Response;
    try {
      // The body goes as a stream of the caller's own buffer (which it zeroes once answered): fetch copies
      // a buffer body into one of its own that nobody zeroes.
      const stream = new ReadableStream<Uint8Array>({
        pull(controller) {
          controller.enqueue(body);
          controller.close();
        },
      });
      res = await fetch(base + path, {
        method: "POST",
        headers,
        body: stream,
        signal,
        client: this.deps.httpClient,
      });
    } catch (err) {
      if (signal.aborted) throw o.onTimeout();
      const msg = String((err as Error)?.message ?? err);
      if (NOT_DELIVERED.test(msg)) throw new WorkerUnreachableError("the worker could not be reached");
      this.deps.logger.warn("worker call failed", {
        path,
        error: msg.replace(/https?:\/\/\S+/g, "<url>").slice(0, 200),
      });
      throw o.onDropped();
    }
    let text: string;
    try {
      text = await res.text();
    } catch {
      throw signal.aborted ? o.onTimeout() : o.onDropped();
    }
    let parsed: Record<string, unknown> | null = null;
    try {
      parsed = JSON.parse(text);
    } catch { /* not JSON */ }
    if (res.ok && parsed) return parsed as T;
    throw toApiError(res.status, parsed);
  }
}

/** The error a worker answered with (its flat error body), as the service's error. */
function toApiError(status: number, body: Record<string, unknown> | null): ApiError {
  const code = body?.code;
  if (typeof code === "string" && code in ERROR_CATALOG) {
    const message = typeof body?.message === "string" ? body.message : undefined;
    const retryAfter = typeof body?.retry_after === "number" ? body.retry_after : undefined;
    return new ApiError(code as ErrorCode, message, { retryAfter });
  }
  return new ApiError("SVC_INTERNAL_ERROR", `The session host answered ${status}.`);
}
