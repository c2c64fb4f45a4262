/**
 * `keys list`: the project's API keys (never their plaintext), one page or all of them.
 *
 * @module
 */
import type { ApiKeySummary } from "@avatar-svc/sdk";
import { API_OPTIONS, clientFromFlags } from "../api_client.ts";
import type { CommandSpec } from "../command.ts";
import { formatTime, printJson, printTable } from "../output.ts";
import { startProgress } from "../progress.ts";
import { UsageError } from "../usage_error.ts";

/** Most pages `--all` follows (100 keys each): a bound, not an expected size. */
const MAX_PAGES = 1000;

/** `keys list`. */
export const keysList: CommandSpec = {
  path: ["keys", "list"],
  summary: "List the project's API keys (GET /v1/api-keys, non-canonical); never their plaintext",
  description:
    "Keys come in key_id order, revoked ones included; HINT is the key's last 4 characters.\nNeeds scope api_keys:read.",
  options: [
    { name: "limit", type: "string", arg: "<n>", help: "page size, 1..100 (default 20)" },
    {
      name: "starting-after",
      type: "string",
      arg: "<key_id>",
      help: "start after this key (the last of the previous page)",
    },
    { name: "all", type: "boolean", help: "follow the pages to the end (JSON: one {data, has_more:false})" },
    ...API_OPTIONS,
  ],
  examples: ["deno task cli keys list", "deno task cli keys list --all --json"],
  async run({ values }, io) {
    const limit = values.limit as string | undefined;
    if (limit !== undefined && !/^\d{1,3}$/.test(limit)) {
      throw new UsageError("--limit must be a whole number");
    }
    const client = clientFromFlags(values, io, startProgress(io, "", false).note);
    const query = {
      limit: limit === undefined ? (values.all ? 100 : undefined) : Number(limit),
      starting_after: values["starting-after"] as string | undefined,
    };
    let page = await client.listApiKeys(query);
    const keys: ApiKeySummary[] = [...page.data];
    for (let pages = 1; values.all && page.has_more && page.data.length > 0 && pages < MAX_PAGES; pages++) {
      page = await client.listApiKeys({ ...query, starting_after: page.data[page.data.length - 1].key_id });
      keys.push(...page.data);
    }
    const hasMore = values.all ? page.has_more && page.data.length > 0 : page.has_more;
    if (values.json) {
      printJson(io, values.all ? { data: keys, has_more: hasMore } : page);
      return 0;
    }
    printTable(
      io,
      ["KEY ID", "NAME", "SCOPES", "STATUS", "CREATED", "REVOKED", "HINT"],
      keys.map((k) => [
        k.key_id,
        k.name,
        k.scopes.join("\n"),
        k.status,
        formatTime(k.created_at),
        formatTime(k.revoked_at),
        `…${k.hint}`,
      ]),
    );
    if (hasMore) {
      io.stdout(`More keys: --starting-after ${keys[keys.length - 1].key_id} (or --all)\n`);
    }
    return 0;
  },
};
