/**
 * `provider_config.vendor3`: a public agent's id, or a private agent's signed URL (pre-minted, or minted by
 * the service with an API key). The signed URL's host and age are checked against the deployment's
 * settings in `signed_url.ts`.
 *
 * @module
 */
import { z } from "@hono/zod-openapi";
import { urlField } from "../../text_fields.ts";
import { hostList, httpsUrl, wssUrl } from "../../settings.ts";
import { defineProvider } from "./definition.ts";
import { signedUrlProblem, VENDOR3_SIGNED_URL_PATH } from "./vendor3_signed_url.ts";

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

/** The provider definition of `vendor3`. */
export const VENDOR3 = defineProvider({
  schema: Vendor3Config,
  credentials: { api_key: "secret", signed_url: { url: "wss", path: VENDOR3_SIGNED_URL_PATH } },
  settings: {
    /** The conversation WebSocket URL of public agents. */
    url: {
      env: "SVC_VENDOR3_URL",
      schema: wssUrl,
      default: "wss://api.elevenlabs.io/v1/convai/conversation",
    },
    /** The REST API base where signed URLs are minted with an `api_key`. */
    apiUrl: { env: "SVC_VENDOR3_API_URL", schema: httpsUrl, default: "https://api.elevenlabs.io" },
    /** Hosts a caller's `signed_url` may point at (lower case). */
    signedUrlHosts: {
      env: "SVC_VENDOR3_SIGNED_URL_HOSTS",
      schema: hostList,
      default:
        "api.elevenlabs.io,api.us.elevenlabs.io,api.eu.residency.elevenlabs.io,api.in.residency.elevenlabs.io",
    },
  },
  check: (_config, { settings, now, credentials }) => {
    const signed = credentials.secret("signed_url");
    return signed ? signedUrlProblem(signed, settings.signedUrlHosts, now) : null;
  },
  cli: [
    { flag: "agent-id", field: "agent_id", arg: "<id>", help: "the agent's id", secret: false },
    {
      flag: "provider-api-key",
      field: "api_key",
      arg: "<key>",
      help: "the vendor's API key",
      secret: true,
    },
    {
      flag: "signed-url",
      field: "signed_url",
      arg: "<wss://…>",
      help: "a pre-minted signed URL",
      secret: true,
    },
  ],
  demo: {
    label: "agent (public, or signed URL)",
    fields: [
      { field: "agent_id", label: "Agent id", input: "text" },
      { field: "signed_url", label: "Signed URL (private agents)", input: "password" },
    ],
  },
});
