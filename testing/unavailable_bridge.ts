/**
 * A bridge that starts no session: for wirings that run no engine (the OpenAPI emitter builds the app
 * with it). Starting a session through it answers the retryable `503 SVC_PROVIDER_UNAVAILABLE`, and the
 * credentials are released.
 *
 * @module
 */
import { ApiError } from "../src/errors.ts";
import type { ConnectRequest, ProviderBridge, ProviderConnection } from "../src/providers/types.ts";

/** A bridge that refuses every session with `SVC_PROVIDER_UNAVAILABLE`. */
export class UnavailableBridge implements ProviderBridge {
  connect(_request: ConnectRequest): Promise<ProviderConnection> {
    return Promise.reject(
      new ApiError(
        "SVC_PROVIDER_UNAVAILABLE",
        "This provider type is not available in this deployment yet.",
        { retryAfter: 60 },
      ),
    );
  }
}
