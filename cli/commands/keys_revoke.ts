/**
 * `keys revoke`: revokes an API key (permanent, idempotent).
 *
 * @module
 */
import { API_OPTIONS, clientFromFlags } from "../api_client.ts";
import type { CommandSpec } from "../command.ts";
import { formatTime, printDetails, printJson } from "../output.ts";
import { startProgress } from "../progress.ts";

/** `keys revoke`. */
export const keysRevoke: CommandSpec = {
  path: ["keys", "revoke"],
  summary: "Revoke an API key (DELETE /v1/api-keys/{key_id}): permanent and idempotent",
  description:
    "Revoking a revoked key answers its original revoked_at. Unknown keys and other projects' keys\nanswer 404 SVC_API_KEY_NOT_FOUND. Needs scope api_keys:write.",
  positionals: [{ name: "key_id", help: "the key's id (svc_key_…), as printed by keys create or keys list" }],
  options: API_OPTIONS,
  examples: ["deno task cli keys revoke svc_key_3kTMd9xq0bq1h7nYQ2Lw6A"],
  async run({ values, positionals }, io) {
    const client = clientFromFlags(values, io, startProgress(io, "", false).note);
    const revoked = await client.revokeApiKey(positionals[0]);
    if (values.json) printJson(io, revoked);
    else {
      printDetails(io, [
        ["key_id", revoked.key_id],
        ["status", revoked.status],
        ["revoked_at", formatTime(revoked.revoked_at)],
      ]);
    }
    return 0;
  },
};
