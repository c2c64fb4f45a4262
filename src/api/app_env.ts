/**
 * Hono environment of the API: the per-request variables.
 *
 * @module
 */
import type { Scope } from "../auth/scopes.ts";
import type { CredentialRead } from "../providers/definitions/credential_reader.ts";

/** The authenticated API key of a request. */
export interface AuthenticatedCaller {
  projectId: string;
  keyId: string;
  scopes: Scope[];
}

/** Variables set by middleware. */
export interface AppEnv {
  Variables: {
    requestId: string;
    caller?: AuthenticatedCaller;
    /** The credentials read from the body's bytes, on routes that take them (zeroed when the request is done). */
    credentials?: CredentialRead;
    /** The error code the request answered with (set by the error path; read by the telemetry). */
    errorCode?: string;
    /** The provider type a create asked for, once its body validated (read by the telemetry). */
    providerType?: string;
  };
}
