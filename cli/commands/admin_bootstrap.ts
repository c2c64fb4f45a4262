/**
 * `admin bootstrap`: mints a project's first API key straight into the configured KV (no API call). Its
 * command line, help and output are relied on by external tests: keep them unchanged.
 *
 * @module
 */
import { loadConfigFromEnv } from "../../src/config.ts";
import { openKv } from "../../src/kv/open.ts";
import { bootstrap, parseBootstrapInput } from "../bootstrap.ts";
import type { CommandSpec } from "../command.ts";

/** The help text of `admin bootstrap` (also printed for `admin` alone). */
export const BOOTSTRAP_HELP =
  `Usage: deno task cli admin bootstrap --project <project_id> --name <name> [--scope <scope>]... [--json]

Mints an API key for a project directly in the configured Deno KV (SVC_KV, default .data/svc.kv).
The plaintext key is printed once; only its SHA-256 is stored.

Options:
  --project <id>    project id (1..128 of A-Z a-z 0-9 _ . : -)
  --name <name>     key name (1..128 characters)
  --scope <scope>   a scope to grant; repeat for several (default: all of
                    sessions:read, sessions:write, api_keys:read, api_keys:write)
  --json            print {"project_id","key_id","api_key","scopes"} as JSON
  -h, --help        show this help
`;

/** `admin bootstrap`. */
export const adminBootstrap: CommandSpec = {
  path: ["admin", "bootstrap"],
  summary: "Mint a project's first API key straight into the configured KV (SVC_KV)",
  help: `${BOOTSTRAP_HELP}\n`,
  options: [
    { name: "project", type: "string", help: "project id" },
    { name: "name", type: "string", help: "key name" },
    { name: "scope", type: "string", multiple: true, help: "a scope to grant" },
    { name: "json", type: "boolean", help: "print JSON" },
  ],
  async run({ values }) {
    const input = parseBootstrapInput({
      project: values.project as string | undefined,
      name: values.name as string | undefined,
      scopes: values.scope as string[] | undefined,
    });
    const config = loadConfigFromEnv();
    const kv = await openKv(config.kv);
    try {
      const result = await bootstrap(kv, input, Date.now());
      if (values.json) console.log(JSON.stringify(result));
      else {
        console.log(`Created API key ${result.key_id} for project ${result.project_id}`);
        console.log(`Scopes: ${result.scopes.join(", ")}`);
        console.log(`API key (shown once, store it now): ${result.api_key}`);
      }
      return 0;
    } finally {
      kv.close();
    }
  },
};
