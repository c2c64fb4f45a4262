/**
 * `provider_config.vendor1_realtime`: the ephemeral client secret the customer's backend mints.
 *
 * @module
 */
import { z } from "@hono/zod-openapi";
import { wssUrl } from "../../settings.ts";
import { defineProvider } from "./definition.ts";

/** `provider_config.vendor1_realtime`. */
export const Vendor1RealtimeConfig = z.strictObject({
  client_secret: z.string().min(1).max(8192).openapi({
    description: "Ephemeral client secret minted by the customer backend.",
  }),
}).openapi("Vendor1RealtimeConfig");

/** The provider definition of `vendor1_realtime`. */
export const VENDOR1_REALTIME = defineProvider({
  schema: Vendor1RealtimeConfig,
  credentials: { client_secret: "secret" },
  settings: {
    /** The realtime WebSocket URL. */
    url: { env: "SVC_VENDOR1_REALTIME_URL", schema: wssUrl, default: "wss://api.openai.com/v1/realtime" },
    /** The model sent as the URL's `model` query parameter, unless the URL already has one. */
    model: {
      env: "SVC_VENDOR1_REALTIME_MODEL",
      schema: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/, {
        error: "must be a model name: 1-128 letters, digits, '.', '_', ':' or '-'",
      }),
      default: "gpt-realtime",
    },
  },
  cli: [{
    flag: "client-secret",
    field: "client_secret",
    arg: "<secret>",
    help: "client secret",
    secret: true,
  }],
  demo: {
    label: "ephemeral client secret",
    fields: [{ field: "client_secret", label: "Client secret (ek_…)", input: "password" }],
  },
});
