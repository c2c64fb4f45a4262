/**
 * `sessions create`: creates and starts a session, with provider settings from flags and/or a JSON file,
 * showing a spinner while the engine connects. Never prints the provider credentials.
 *
 * @module
 */
import { ApiError, isValidIdempotencyKey, newIdempotencyKey } from "@avatar-svc/sdk";
import { API_OPTIONS, clientFromFlags } from "../api_client.ts";
import type { CommandSpec, Values } from "../command.ts";
import type { Io } from "../io.ts";
import { formatTime, printDetails, printJson } from "../output.ts";
import { progressEnabled, startProgress } from "../progress.ts";
import { reportApiError } from "../report_error.ts";
import { buildSessionRequest, parseConfigText } from "../session_request.ts";
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
      help: "external_engine | vendor1_realtime | vendor2 | vendor3 (or provider_type in --config)",
    },
    {
      name: "config",
      type: "string",
      arg: "<file.json>",
      help: "the request body as JSON ('-': standard input)",
    },
    {
      name: "engine-url",
      type: "string",
      arg: "<wss://…>",
      help: "external_engine: the engine's wss:// URL",
    },
    {
      name: "engine-header",
      type: "string",
      arg: "<'Name: value'>",
      multiple: true,
      help: "external_engine: a header of the engine's upgrade request (credential)",
    },
    {
      name: "sample-rate",
      type: "string",
      arg: "<hz>",
      help: "external_engine: user audio rate, 8000..48000",
    },
    {
      name: "client-secret",
      type: "string",
      arg: "<secret>",
      help: "vendor1_realtime: client secret (credential)",
    },
    { name: "access-token", type: "string", arg: "<token>", help: "vendor2: access token (credential)" },
    { name: "agent-id", type: "string", arg: "<id>", help: "vendor2, vendor3: the agent's id" },
    {
      name: "provider-api-key",
      type: "string",
      arg: "<key>",
      help: "vendor3: the vendor's API key (credential)",
    },
    {
      name: "signed-url",
      type: "string",
      arg: "<wss://…>",
      help: "vendor3: a pre-minted signed URL (credential)",
    },
    { name: "avatar", type: "string", arg: "<avatar_id>", help: "avatar_config.avatar_id" },
    { name: "bg", type: "string", arg: "<bg_id>", help: "avatar_config.bg_id" },
    { name: "transport", type: "string", arg: "<t>", help: "auto (default) | websocket_fmp4 | webrtc_sfu" },
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
    'jq -n \'{provider_type:"vendor2",provider_config:{vendor2:{access_token:env.TOKEN,agent_id:"a1"}}}\' \\',
    "    | deno task cli sessions create --config -",
  ],
  async run({ values }, io) {
    const json = values.json === true;
    const body = buildSessionRequest(
      {
        provider: str(values, "provider"),
        engineUrl: str(values, "engine-url"),
        engineHeaders: values["engine-header"] as string[] | undefined,
        sampleRate: str(values, "sample-rate"),
        clientSecret: str(values, "client-secret"),
        accessToken: str(values, "access-token"),
        agentId: str(values, "agent-id"),
        providerApiKey: str(values, "provider-api-key"),
        signedUrl: str(values, "signed-url"),
        avatar: str(values, "avatar"),
        bg: str(values, "bg"),
        transport: str(values, "transport"),
        webhookUrl: str(values, "webhook-url"),
      },
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
