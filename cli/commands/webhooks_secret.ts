/**
 * `webhooks secret <get|rotate>`: reads (created on first use) or rotates the calling key's project's
 * webhook signing secret through the API (`GET /v1/webhooks/secret`, `POST /v1/webhooks/secret/rotate`),
 * with the operator's API key like every other API command: the secret printed is the one the service
 * signs with, and the project is the key's own.
 *
 * @module
 */
import type { WebhookSecret } from "@avatar-svc/sdk";
import { API_OPTIONS, clientFromFlags } from "../api_client.ts";
import type { CommandSpec } from "../command.ts";
import { formatTime, printDetails, printJson } from "../output.ts";
import { startProgress } from "../progress.ts";
import { UsageError } from "../usage_error.ts";

/** `webhooks secret`. */
export const webhooksSecret: CommandSpec = {
  path: ["webhooks", "secret"],
  summary:
    "Read (get) or rotate the project's webhook signing secret (GET /v1/webhooks/secret, POST …/rotate)",
  positionals: [{ name: "action", help: "get (creates the secret on first use) or rotate" }],
  description:
    "The project is the API key's own. After a rotation, deliveries carry signatures with both the new\nand the previous secret for 24 hours. Needs scope api_keys:write (the secret is a credential).",
  options: API_OPTIONS,
  examples: [
    "deno task cli webhooks secret get",
    "deno task cli webhooks secret rotate --json",
  ],
  async run({ values, positionals }, io) {
    const [action] = positionals;
    if (action !== "get" && action !== "rotate") throw new UsageError("the action must be get or rotate");
    const progress = startProgress(io, "", false);
    const client = clientFromFlags(values, io, progress.note);
    const secret: WebhookSecret = action === "get"
      ? await client.getWebhookSecret()
      : await client.rotateWebhookSecret();
    if (values.json) {
      printJson(io, secret);
      return 0;
    }
    printDetails(io, [
      ["secret", secret.secret],
      ["created_at", formatTime(secret.created_at)],
      ["rotated_at", formatTime(secret.rotated_at)],
      ["previous_secret", secret.previous_secret ?? undefined],
      [
        "previous_valid_until",
        secret.previous_valid_until === null ? undefined : formatTime(secret.previous_valid_until),
      ],
    ]);
    return 0;
  },
};
