/**
 * `provider_config.vendor2`: a short-lived access token with an agent grant, and the agent's id.
 *
 * @module
 */
import { z } from "@hono/zod-openapi";
import { wssUrl } from "../../settings.ts";
import { defineProvider } from "./definition.ts";

/** `provider_config.vendor2`. */
export const Vendor2Config = z.strictObject({
  access_token: z.string().min(1).max(8192).openapi({
    description: "Short-lived token minted by the customer backend with an agent grant.",
  }),
  agent_id: z.string().min(1).max(256),
}).openapi("Vendor2Config");

/** The provider definition of `vendor2`. */
export const VENDOR2 = defineProvider({
  schema: Vendor2Config,
  credentials: { access_token: "secret" },
  settings: {
    /** The agents WebSocket base URL; the agent id is appended as a path segment. */
    url: { env: "SVC_VENDOR2_URL", schema: wssUrl, default: "wss://api.cartesia.ai/v1/agents/websocket" },
  },
  cli: [
    { flag: "access-token", field: "access_token", arg: "<token>", help: "access token", secret: true },
    { flag: "agent-id", field: "agent_id", arg: "<id>", help: "the agent's id", secret: false },
  ],
  demo: {
    label: "access token and agent",
    fields: [
      { field: "access_token", label: "Access token (agent grant)", input: "password" },
      { field: "agent_id", label: "Agent id", input: "text" },
    ],
  },
});
