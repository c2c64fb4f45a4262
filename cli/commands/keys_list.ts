/**
 * `keys list`: the project's API keys (never their plaintext), one page or all of them.
 *
 * @module
 */
import type { ApiKeySummary } from "@avatar-svc/sdk";
import { API_OPTIONS, clientFromFlags } from "../api_client.ts";
import type { CommandSpec } from "../command.ts";
import { formatTime, printJson, printTable } from "../output.ts";
import { printable } from "../printable.ts";
import { startProgress } from "../progress.ts";
import { UsageError } from "../usage_error.ts";

/** Most pages read (100 keys each): a bound, not an expected size. */
const MAX_PAGES = 1000;

/** Newest first; keys created in the same millisecond in key_id order. */
function newestFirst(a: ApiKeySummary, b: ApiKeySummary): number {
  return b.created_at - a.created_at || (a.key_id < b.key_id ? -1 : a.key_id > b.key_id ? 1 : 0);
}

/** `keys list`. */
export const keysList: CommandSpec = {
  path: ["keys", "list"],
  summary:
    "List the project's API keys, newest first (GET /v1/api-keys, non-canonical); never their plaintext",
  description:
    "Keys come newest first, revoked ones included; HINT is the key's last 4 characters. The API pages in\nkey_id order, so every page is read (100 keys a request) and the keys are ordered here.\nNeeds scope api_keys:read.",
  options: [
    { name: "limit", type: "string", arg: "<n>", help: "how many keys to show, 1..100 (default 20)" },
    {
      name: "starting-after",
      type: "string",
      arg: "<key_id>",
      help: "show the keys after this one (the last shown before): older ones",
    },
    { name: "all", type: "boolean", help: "show every key (JSON: one {data, has_more:false})" },
    ...API_OPTIONS,
  ],
  examples: ["deno task cli keys list", "deno task cli keys list --all --json"],
  async run({ values }, io) {
    const limitFlag = values.limit as string | undefined;
    if (limitFlag !== undefined && (!/^\d{1,3}$/.test(limitFlag) || +limitFlag < 1 || +limitFlag > 100)) {
      throw new UsageError("--limit must be a whole number in 1..100");
    }
    const limit = limitFlag === undefined ? 20 : Number(limitFlag);
    const client = clientFromFlags(values, io, startProgress(io, "", false).note);
    let page = await client.listApiKeys({ limit: 100 });
    const keys: ApiKeySummary[] = [...page.data];
    for (let pages = 1; page.has_more && page.data.length > 0 && pages < MAX_PAGES; pages++) {
      page = await client.listApiKeys({ limit: 100, starting_after: page.data[page.data.length - 1].key_id });
      keys.push(...page.data);
    }
    keys.sort(newestFirst);
    let rest = keys;
    const after = values["starting-after"] as string | undefined;
    if (after !== undefined) {
      const at = keys.findIndex((k) => k.key_id === after);
      if (at < 0) throw new UsageError("--starting-after names no key of this project");
      rest = keys.slice(at + 1);
    }
    const shown = values.all ? rest : rest.slice(0, limit);
    const hasMore = shown.length < rest.length || (page.has_more && page.data.length > 0);
    if (values.json) {
      printJson(io, { data: shown, has_more: hasMore });
      return 0;
    }
    printTable(
      io,
      ["KEY ID", "NAME", "SCOPES", "STATUS", "CREATED", "REVOKED", "HINT"],
      shown.map((k) => [
        k.key_id,
        k.name,
        k.scopes,
        k.status,
        formatTime(k.created_at),
        formatTime(k.revoked_at),
        `…${k.hint}`,
      ]),
    );
    if (hasMore && shown.length) {
      io.stdout(`More keys: --starting-after ${printable(shown[shown.length - 1].key_id)} (or --all)\n`);
    }
    return 0;
  },
};
