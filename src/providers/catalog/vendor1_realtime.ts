/**
 * `provider_config.vendor1_realtime`: the ephemeral client secret the customer's backend mints.
 *
 * @module
 */
import { z } from "@hono/zod-openapi";
import { defineProvider } from "./definition.ts";

/** `provider_config.vendor1_realtime`. */
export const Vendor1RealtimeConfig = z.strictObject({
  client_secret: z.string().min(1).max(8192).openapi({
    description: "Ephemeral client secret minted by the customer backend.",
  }),
}).openapi("Vendor1RealtimeConfig");

/** The catalog's entry of `vendor1_realtime`. */
export const VENDOR1_REALTIME = defineProvider({
  schema: Vendor1RealtimeConfig,
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
