/**
 * The one answer for a session that is not active where an active one is needed (an end, a client token):
 * 404 when there is no such session, 409 `SVC_SESSION_ENDED` once it has ended, 409 `SVC_SESSION_CONFLICT`
 * while it is starting, ending or failed. The API side, the fleet and the worker all answer through it.
 *
 * @module
 */
import { ApiError } from "../errors.ts";
import type { SessionRecord } from "./session_record.ts";
import { isEnded } from "./session_states.ts";

/**
 * The 404/409 error for a session that is not active (`null`: there is none, or it is another project's).
 *
 * @example Usage
 * ```ts
 * import { notActiveError } from "./not_active_error.ts";
 * notActiveError({ status: "ended" }).code; // "SVC_SESSION_ENDED"
 * notActiveError({ status: "activating" }).message; // "The session is activating, not active."
 * notActiveError(null).code; // "SVC_SESSION_NOT_FOUND"
 * ```
 */
export function notActiveError(rec: Pick<SessionRecord, "status"> | null): ApiError {
  if (!rec) return new ApiError("SVC_SESSION_NOT_FOUND");
  if (isEnded(rec.status)) return new ApiError("SVC_SESSION_ENDED");
  return new ApiError("SVC_SESSION_CONFLICT", `The session is ${rec.status}, not active.`);
}
