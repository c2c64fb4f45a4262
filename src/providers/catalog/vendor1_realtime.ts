/**
 * `provider_config.vendor1_realtime`: the ephemeral client secret the customer's backend mints.
 *
 * @module
 */
import { z } from "@hono/zod-openapi";

/** `provider_config.vendor1_realtime`. */
export const Vendor1RealtimeConfig = z.strictObject({
  client_secret: z.string().min(1).max(8192).openapi({
    description: "Ephemeral client secret minted by the customer backend.",
  }),
}).openapi("Vendor1RealtimeConfig");
