/**
 * The worker's internal API, as both sides speak it (`remote_worker_client.ts` calls it,
 * `src/api/routes/internal.ts` serves it). Every call is a signed POST (see `internal_auth.ts`); answers are
 * JSON, errors the service's flat error body.
 *
 * | path | body | answer |
 * |---|---|---|
 * | `/internal/v1/sessions/start` | binary: u32 length (big-endian) + {@link StartSpec} JSON + credential JSON | {@link StreamEndpoints} |
 * | `/internal/v1/sessions/end` | `{project_id, session_id, force, reason}` | the end answer |
 * | `/internal/v1/sessions/stream` | `{project_id, session_id}` | {@link StreamEndpoints} |
 *
 * The start body carries the provider credentials after the spec, as their holder's encoding (bytes; see
 * `src/auth/credential_holder.ts`): the worker copies them into its own holder, and both sides zero
 * their buffers.
 *
 * @module
 */
import { CredentialHolder } from "../auth/credential_holder.ts";
import type { StartSpec } from "../vocabulary/host_requests.ts";

/** Paths of the internal API. */
export const INTERNAL_PATHS = {
  start: "/internal/v1/sessions/start",
  end: "/internal/v1/sessions/end",
  stream: "/internal/v1/sessions/stream",
} as const;

/** Largest spec part of a start body. */
const MAX_SPEC_BYTES = 4096;

/** Frames a start call's body. The caller zeroes the result once sent. */
export function encodeStart(spec: StartSpec, credentials: Uint8Array): Uint8Array<ArrayBuffer> {
  const head = new TextEncoder().encode(JSON.stringify(spec));
  const out = new Uint8Array(4 + head.length + credentials.length);
  new DataView(out.buffer).setUint32(0, head.length);
  out.set(head, 4);
  out.set(credentials, 4 + head.length);
  return out;
}

/** Reads a start body (null when malformed); the caller zeroes `body` afterwards. */
export function decodeStart(body: Uint8Array): { spec: StartSpec; credentials: CredentialHolder } | null {
  if (body.length < 4) return null;
  const n = new DataView(body.buffer, body.byteOffset, body.byteLength).getUint32(0);
  if (n > MAX_SPEC_BYTES || 4 + n >= body.length) return null;
  let spec: StartSpec;
  try {
    spec = JSON.parse(new TextDecoder().decode(body.subarray(4, 4 + n)));
  } catch {
    return null;
  }
  if (
    typeof spec?.sessionId !== "string" || typeof spec.projectId !== "string" ||
    typeof spec.providerType !== "string" || typeof spec.transport !== "string"
  ) return null;
  const credentials = CredentialHolder.fromBytes(body.subarray(4 + n));
  return credentials ? { spec, credentials } : null;
}
