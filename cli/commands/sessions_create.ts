/**
 * `sessions create`: creates and starts a session, with provider settings from flags and/or a JSON file,
 * showing a spinner while the engine connects. Never prints the provider credentials.
 *
 * @module
 */
import { ApiError, isValidIdempotencyKey, newIdempotencyKey } from "@avatar-svc/sdk";
import { API_OPTIONS, clientFromFlags } from "../api_client.ts";
import type { CommandSpec, OptionSpec, Values } from "../command.ts";
import type { Io } from "../io.ts";
import { formatTime, printDetails, printJson } from "../output.ts";
import { progressEnabled, startProgress } from "../progress.ts";
import { PROVIDER_TYPES } from "../../src/providers/definitions/provider_types.ts";
import { REQUESTED_TRANSPORTS } from "../../src/vocabulary/transports.ts";
import { reportApiError } from "../report_error.ts";
import {
  buildSessionRequest,
  flagKey,
  parseConfigText,
  PROVIDER_FLAGS,
  type SessionFlags,
} from "../session_request.ts";
import { UsageError } from "../usage_error.ts";

/** Reads the `--config` file (`-` for standard input); a read failure is a usage error. */
async function readConfig(io: Io, path: string): Promise<Record<string, unknown>> {
  const source = path === "-" ? "standard input" : path;
  let text: string;
  try {
    text = path === "-" ? await io.readStdin() : await io.readTextFile(path);
  } catch (err) {
    throw new UsageError(`--config: cannot read ${source} (${(err as Error).name})`);
  }
  return parseConfigText(text, source);
}

const str = (values: Values, name: string) => values[name] as string | undefined;

/** Whether repeating a failed create can succeed: a retryable error, or an unknown outcome. */
function retryCanHelp(err: ApiError): boolean {
  return err.retryable || err.code === "SDK_NETWORK_ERROR" || err.code === "SDK_INVALID_RESPONSE";
}

/** `sessions create`. */
export const sessionsCreate: CommandSpec = {
  path: ["sessions", "create"],
  summary: "Create and start a session (POST /v1/sessions); answers once it is active",
  description: [
    "Provider settings come from flags, from --config (a POST /v1/sessions body as JSON; '-' reads it",
    "from standard input), or both: flags override the file, --engine-header adds to its auth_headers.",
    "Credentials are sent to the service only and never printed. Prefer --config (or '--config -') for",
    "them: command-line flags show in the process list and the shell history.",
    "",
    "Every create sends an Idempotency-Key (a fresh UUID unless --idempotency-key is given). Repeating",
    "the command with the same key and settings within 24 h returns the same session, never a second one.",
    "Needs scope sessions:write.",
  ].join("\n"),
  options: [
    {
      name: "provider",
      type: "string",
      arg: "<type>",
      help: `${PROVIDER_TYPES.join(" | ")} (or provider_type in --config)`,
    },
    {
      name: "config",
      type: "string",
      arg: "<file.json>",
      help: "the request body as JSON ('-': standard input)",
    },
    ...PROVIDER_FLAGS.map(({ field, providers }): OptionSpec => ({
      name: field.flag,
      type: "string",
      arg: field.arg,
      ...(field.value === "headers" ? { multiple: true } : {}),
      help: `${providers.join(", ")}: ${field.help}${field.secret ? " (credential)" : ""}`,
    })),
    { name: "avatar", type: "string", arg: "<avatar_id>", help: "avatar_config.avatar_id" },
    { name: "bg", type: "string", arg: "<bg_id>", help: "avatar_config.bg_id" },
    {
      name: "transport",
      type: "string",
      arg: "<t>",
      help: REQUESTED_TRANSPORTS.map((t) => t === "auto" ? "auto (default)" : t).join(" | "),
    },
    { name: "webhook-url", type: "string", arg: "<https://…>", help: "webhook_url for session events" },
    {
      name: "idempotency-key",
      type: "string",
      arg: "<key>",
      help: "Idempotency-Key, 1..255 printable ASCII (default: a fresh UUID v4)",
    },
    ...API_OPTIONS,
  ],
  examples: [
    "deno task cli sessions create --provider external_engine --engine-url wss://localhost:8788/v0 \\",
    '    --engine-header "Authorization: Bearer $(cat .data/reference-engine/token)"',
    "deno task cli sessions create --config session.json --avatar anna --json",
    'deno task cli sessions create --provider vendor1_realtime --client-secret "$EPHEMERAL_SECRET"',
    "deno task cli sessions create --provider vendor3 --agent-id agent_123   # a public agent",
    'jq -n \'{provider_type:"vendor2",provider_config:{vendor2:{access_token:env.TOKEN,agent_id:"a1"}}}\' \\',
    "    | deno task cli sessions create --config -",
  ],
  async run({ values }, io) {
    const json = values.json === true;
    const flags: SessionFlags = {
      provider: str(values, "provider"),
      avatar: str(values, "avatar"),
      bg: str(values, "bg"),
      transport: str(values, "transport"),
      webhookUrl: str(values, "webhook-url"),
    };
    for (const { field } of PROVIDER_FLAGS) {
      (flags as Record<string, unknown>)[flagKey(field)] = values[field.flag];
    }
    const body = buildSessionRequest(
      flags,
      values.config === undefined ? undefined : await readConfig(io, values.config as string),
    );
    const idempotencyKey = str(values, "idempotency-key") ?? newIdempotencyKey();
    if (!isValidIdempotencyKey(idempotencyKey)) {
      throw new UsageError("--idempotency-key must be 1..255 printable ASCII characters (no spaces)");
    }

    const client = clientFromFlags(values, io, (notice) => progress.note(notice));
    const started = Date.now();
    const progress = startProgress(
      io,
      `Starting session (${body.provider_type})…`,
      progressEnabled(io, json),
    );
    let session;
    try {
      session = await client.createSession(body, { idempotencyKey });
    } catch (err) {
      progress.stop();
      if (!(err instanceof ApiError)) throw err;
      // The hint only where a repeat can succeed: an error the service marked retryable, or no usable
      // answer (the session may or may not have been created: the same key replays it if it was).
      reportApiError(
        io,
        err,
        retryCanHelp(err)
          ? [
            `idempotency_key: ${idempotencyKey} (repeat with --idempotency-key ${idempotencyKey} to retry safely)`,
          ]
          : [],
      );
      return 1;
    }
    progress.succeed(
      `Session ${session.session_id} is ${session.status} (${((Date.now() - started) / 1000).toFixed(1)} s)`,
    );
    if (json) {
      printJson(io, session);
      return 0;
    }
    printDetails(io, [
      ["session_id", session.session_id],
      ["status", session.status],
      ["transport", session.transport],
      ["expires_at", formatTime(session.expires_at)],
      ["idempotency_key", idempotencyKey],
      ["client_token", session.client_token],
      ["session_token", session.stream_metadata.session_token],
      ["sfu_endpoint", session.stream_metadata.sfu_endpoint ?? "-"],
      ["media_url", session.stream_metadata.media_url ?? "-"],
    ]);
    return 0;
  },
};
