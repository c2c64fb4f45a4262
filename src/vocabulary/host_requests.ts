/**
 * What a session host is asked: to start a session (the record's non-secret facts; the credentials travel
 * apart, in a holder) and to end one. The API side sends these through the `SessionHost` port
 * (`src/sessions/session_host.ts`), in-process or over the worker's internal API (`src/fleet/internal_api.ts`),
 * and the worker (`src/worker/session_worker.ts`) carries them out.
 *
 * @module
 */
import type { EndReason } from "./end_reasons.ts";
import type { ProviderType } from "../providers/definitions/provider_types.ts";
import type { TransportKind } from "./transports.ts";

/** What a worker needs to start a session (the record's non-secret facts). */
export interface StartSpec {
  sessionId: string;
  projectId: string;
  providerType: ProviderType;
  transport: TransportKind;
  avatarId: string | null;
  bgId: string | null;
}

/** Teardown timeout of a graceful end (the interface specification's 10 s). */
export const TEARDOWN_TIMEOUT_MS = 10_000;

/** How to end a session. */
export interface EndOptions {
  force: boolean;
  reason: EndReason;
}
