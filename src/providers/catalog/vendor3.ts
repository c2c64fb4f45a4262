/**
 * `provider_config.vendor3`: a public agent's id, or a private agent's signed URL (pre-minted, or minted by
 * the service with an API key). The signed URL's host and age are checked against the deployment's
 * settings in `signed_url.ts`.
 *
 * @module
 */
import { z } from "@hono/zod-openapi";
import { urlField } from "../../text_fields.ts";

/** Path a vendor3 `signed_url` must have. */
export const VENDOR3_SIGNED_URL_PATH = "/v1/convai/conversation";

/** `provider_config.vendor3`. */
export const Vendor3Config = z.strictObject({
  agent_id: z.string().min(1).max(256),
  api_key: z.string().min(1).max(8192).optional().openapi({
    description:
      "Server-side key used by the customer backend for private agents; never placed in a URL or log.",
  }),
  signed_url: urlField(
    "wss",
    4096,
    (url) =>
      url.pathname === VENDOR3_SIGNED_URL_PATH
        ? null
        : `must be a wss:// URL with path ${VENDOR3_SIGNED_URL_PATH} on an allowed host of the provider`,
  )
    .optional()
    .openapi({
      description:
        "Pre-minted signed URL (valid 15 minutes), used instead of agent_id; it must be on an allowed host of the provider (SVC_VENDOR3_SIGNED_URL_HOSTS).",
      format: "uri",
    }),
}).openapi("Vendor3Config");
