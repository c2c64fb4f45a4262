/**
 * `provider_config.vendor2`: a short-lived access token with an agent grant, and the agent's id.
 *
 * @module
 */
import { z } from "@hono/zod-openapi";

/** `provider_config.vendor2`. */
export const Vendor2Config = z.strictObject({
  access_token: z.string().min(1).max(8192).openapi({
    description: "Short-lived token minted by the customer backend with an agent grant.",
  }),
  agent_id: z.string().min(1).max(256),
}).openapi("Vendor2Config");
