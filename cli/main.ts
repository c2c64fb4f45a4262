/**
 * Operators' CLI: `deno task cli <command>`. Every command but `admin bootstrap` talks to the service's
 * API through the SDK (`sdk/`) with the operator's API key; `admin bootstrap`, the only command that
 * bypasses the API, writes straight into the configured KV.
 *
 * Exit codes: 0 success, 1 API error (code, message and request id on standard error), 2 usage error.
 *
 * @module
 */
import { ApiError } from "@avatar-svc/sdk";
import { ConfigError } from "../src/config.ts";
import { DEFAULT_API_URL } from "./api_client.ts";
import { type CommandSpec, runCommand } from "./command.ts";
import { adminBootstrap, BOOTSTRAP_HELP } from "./commands/admin_bootstrap.ts";
import { avatarsCreate, avatarsDelete, avatarsGet, avatarsList, avatarsPreview } from "./commands/avatars.ts";
import { keysCreate } from "./commands/keys_create.ts";
import { keysList } from "./commands/keys_list.ts";
import { keysRevoke } from "./commands/keys_revoke.ts";
import { sessionsCreate } from "./commands/sessions_create.ts";
import { sessionsEnd } from "./commands/sessions_end.ts";
import { sessionsGet } from "./commands/sessions_get.ts";
import { sessionsList } from "./commands/sessions_list.ts";
import { sessionsMetrics } from "./commands/sessions_metrics.ts";
import { sessionsToken } from "./commands/sessions_token.ts";
import { webhooksSecret } from "./commands/webhooks_secret.ts";
import { denoIo, type Io } from "./io.ts";
import { printable } from "./printable.ts";
import { reportApiError } from "./report_error.ts";
import { UsageError } from "./usage_error.ts";

/** Every command, in help order. */
export const COMMANDS: readonly CommandSpec[] = [
  keysCreate,
  keysRevoke,
  keysList,
  sessionsCreate,
  sessionsGet,
  sessionsList,
  sessionsMetrics,
  sessionsEnd,
  sessionsToken,
  webhooksSecret,
  avatarsCreate,
  avatarsList,
  avatarsGet,
  avatarsPreview,
  avatarsDelete,
  adminBootstrap,
];

const GROUPS: Record<string, string> = {
  keys: "API keys of the calling key's project",
  sessions: "sessions: create and start, inspect, list, measure, end, mint client tokens",
  webhooks: "the project's webhook signing secret",
  avatars: "project avatars: create from a style or a drawing, list, show, preview, delete",
  admin: "operator tasks that bypass the API (straight in the configured KV)",
};

function commandList(commands: readonly CommandSpec[]): string {
  const width = Math.max(...commands.map((c) => c.path.join(" ").length));
  return commands.map((c) => `  ${c.path.join(" ").padEnd(width)}  ${c.summary}`).join("\n");
}

const HELP = `Usage: deno task cli <command> [options]

Commands:
${commandList(COMMANDS)}

API commands (keys, sessions, webhooks) take:
  --api-url <url>   service URL (default: $SVC_API_URL, else ${DEFAULT_API_URL})
  --api-key <key>   API key (default: $SVC_API_KEY)
  --retries <n>     retry retryable failures up to n times (default 0)
  --json            print the API's answer as JSON, exactly

Environment: SVC_API_URL, SVC_API_KEY (API commands); SVC_KV (admin bootstrap); NO_COLOR.
Exit codes: 0 success, 1 API error (code, message and request id on stderr), 2 usage error.

Run 'deno task cli <command> --help' for a command's options. Documentation: docs/cli.md.
`;

function groupHelp(group: string): string {
  if (group === "admin") return BOOTSTRAP_HELP;
  const commands = COMMANDS.filter((c) => c.path[0] === group);
  return `Usage: deno task cli ${group} <${commands.map((c) => c.path[1]).join("|")}> [options]\n\n${
    GROUPS[group]
  }:\n${commandList(commands)}\n\nRun 'deno task cli ${group} <command> --help' for its options.\n`;
}

const isHelp = (arg: string | undefined) => arg === "--help" || arg === "-h" || arg === "help";

/** Runs the CLI with `args`; returns the exit code. */
export async function run(args: string[], io: Io = denoIo()): Promise<number> {
  try {
    const [group, sub, ...rest] = args;
    if (!group || isHelp(group)) {
      io.stdout(`${HELP}\n`);
      return group ? 0 : 2;
    }
    if (group in GROUPS) {
      if (sub === undefined || isHelp(sub)) {
        io.stdout(`${groupHelp(group)}\n`);
        return sub ? 0 : 2;
      }
      const command = COMMANDS.find((c) => c.path[0] === group && c.path[1] === sub);
      if (command) return await runCommand(command, rest, io);
    }
    io.stderr(`unknown command: ${printable([group, sub].filter(Boolean).join(" "))}\n\n${HELP}\n`);
    return 2;
  } catch (err) {
    if (err instanceof ApiError) {
      reportApiError(io, err);
      return 1;
    }
    if (
      err instanceof UsageError || err instanceof ConfigError ||
      (err as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")
    ) {
      io.stderr(`error: ${printable((err as Error).message)}\n`);
      return 2;
    }
    io.stderr(`error: ${printable(String((err as Error).message ?? err))}\n`);
    return 1;
  }
}

if (import.meta.main) Deno.exit(await run(Deno.args));
