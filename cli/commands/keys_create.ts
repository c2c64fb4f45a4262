/**
 * `keys create`: creates a project API key through the API and prints its plaintext, once.
 *
 * @module
 */
import { API_OPTIONS, clientFromFlags } from "../api_client.ts";
import type { CommandSpec } from "../command.ts";
import { formatTime, printDetails, printJson } from "../output.ts";
import { printable } from "../printable.ts";
import { startProgress } from "../progress.ts";
import { UsageError } from "../usage_error.ts";

/** Scopes granted when no `--scope` is given. */
const ALL_SCOPES = [
  "sessions:read",
  "sessions:write",
  "api_keys:read",
  "api_keys:write",
  "avatars:read",
  "avatars:write",
] as const;

/** `keys create`. */
export const keysCreate: CommandSpec = {
  path: ["keys", "create"],
  summary: "Create an API key (POST /v1/api-keys); its plaintext is printed this once",
  description:
    "The new key belongs to the calling key's project and may only hold scopes the calling key holds\n(else 403 SVC_AUTH_FORBIDDEN). Needs scope api_keys:write.",
  options: [
    { name: "name", type: "string", arg: "<name>", help: "key name (1..128 characters), required" },
    {
      name: "scope",
      type: "string",
      arg: "<scope>",
      multiple: true,
      help: `a scope to grant; repeat for several (default: all of ${ALL_SCOPES.join(", ")})`,
    },
    ...API_OPTIONS,
  ],
  examples: [
    'deno task cli keys create --name "read-only dashboard" --scope sessions:read',
    "deno task cli keys create --name ci --json | jq -r .api_key",
  ],
  async run({ values }, io) {
    const name = values.name as string | undefined;
    if (!name) throw new UsageError("--name <name> is required");
    const scopes = (values.scope as string[] | undefined)?.length
      ? values.scope as string[]
      : [...ALL_SCOPES];
    const client = clientFromFlags(values, io, startProgress(io, "", false).note);
    const created = await client.createApiKey({
      name,
      scopes: [...new Set(scopes)] as (typeof ALL_SCOPES)[number][],
    });
    if (values.json) {
      printJson(io, created);
      return 0;
    }
    printDetails(io, [
      ["key_id", created.key_id],
      ["name", created.name],
      ["scopes", created.scopes.join(", ")],
      ["created_at", formatTime(created.created_at)],
    ]);
    io.stdout(`API key (shown once, store it now): ${printable(created.api_key)}\n`);
    return 0;
  },
};
