/**
 * Connector for provider types whose engine bridge is not part of this deployment yet (the three vendor
 * engines have their own issue). Their configuration is fully validated at creation; starting such a
 * session answers the retryable `503 SVC_PROVIDER_UNAVAILABLE`, and the credentials are released.
 *
 * @module
 */
import { ApiError } from "../errors.ts";
import type { ConnectRequest, ProviderConnection, ProviderConnector } from "./types.ts";

/** A connector that refuses every session with `SVC_PROVIDER_UNAVAILABLE`. */
export class UnavailableConnector implements ProviderConnector {
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
