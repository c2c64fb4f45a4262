/**
 * Operators' CLI: `deno task cli <command>`.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { ConfigError, loadConfigFromEnv } from "../src/config.ts";
import { openKv } from "../src/server.ts";
import { bootstrap, parseBootstrapInput, UsageError } from "./admin_bootstrap.ts";
import { runWebhooksCommand } from "./webhooks_secret.ts";

const HELP = `Usage: deno task cli <command> [options]

Commands:
  admin bootstrap   Mint a project's first API key straight into the configured KV (SVC_KV)
  webhooks secret   Read (get) or rotate a project's webhook signing secret in the configured KV

Run 'deno task cli <command> --help' for a command's options.
`;

const BOOTSTRAP_HELP =
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

async function adminBootstrap(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      project: { type: "string" },
      name: { type: "string" },
      scope: { type: "string", multiple: true },
      json: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
    strict: true,
  });
  if (values.help) {
    console.log(BOOTSTRAP_HELP);
    return 0;
  }
  const input = parseBootstrapInput({ project: values.project, name: values.name, scopes: values.scope });
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
}

/** Runs the CLI with `args`; returns the exit code. */
export async function run(args: string[]): Promise<number> {
  try {
    const [command, sub, ...rest] = args;
    if (!command || command === "--help" || command === "-h" || command === "help") {
      console.log(HELP);
      return command ? 0 : 2;
    }
    if (command === "admin" && sub === "bootstrap") return await adminBootstrap(rest);
    if (command === "webhooks") return await runWebhooksCommand(args.slice(1));
    if (command === "admin" && (sub === undefined || sub === "--help" || sub === "-h")) {
      console.log(BOOTSTRAP_HELP);
      return sub ? 0 : 2;
    }
    console.error(`unknown command: ${[command, sub].filter(Boolean).join(" ")}\n\n${HELP}`);
    return 2;
  } catch (err) {
    if (
      err instanceof UsageError || err instanceof ConfigError ||
      (err as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")
    ) {
      console.error(`error: ${(err as Error).message}`);
      return 2;
    }
    console.error(`error: ${(err as Error).message ?? err}`);
    return 1;
  }
}

if (import.meta.main) Deno.exit(await run(Deno.args));
