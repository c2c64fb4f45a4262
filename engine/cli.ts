/**
 * Command-line parsing for `deno task engine` (engine/main.ts), kept free of side effects so it can be tested.
 *
 * @module
 */

import { parseArgs } from "node:util";
import type { ConversationMode } from "./conversation.ts";
import { MAX_SAMPLE_RATE, MIN_SAMPLE_RATE } from "../src/speech/v0_protocol.ts";

/** Usage text printed by `--help`. */
export const USAGE = `Usage: deno task engine [options]

Runs the reference conversation engine (external conversation engine protocol V0) over wss://.

Options:
  --host <addr>          interface to listen on (default 127.0.0.1)
  --port <n>             TCP port, 0 for an ephemeral one (default 8788)
  --path <path>          WebSocket upgrade path (default /v0)
  --token <token>        bearer token the bridge must send (default: read or create <tls-dir>/token)
  --tls-dir <dir>        where ca.pem, ca.key, server.pem, server.key and token live
                         (default .data/reference-engine)
  --mode answer|echo     answer: say how long the user spoke, then play their words back;
                         echo: only play their words back (default answer)
  --greeting <text>      greeting spoken when a session starts
  --no-greeting          no greeting
  --voice <voice>        espeak-ng voice (default en-us)
  --demo-tool <name>     before each answer, call the client tool <name> (tool_call, arguments
                         {turn_id, speech_ms}) and say what it answered (answer mode)
  --output-rate <hz>     sample rate of the engine's audio, ${MIN_SAMPLE_RATE}-${MAX_SAMPLE_RATE} (default 24000)
  --auth-failure http_401|close_4001
                         how a bad token is refused: HTTP 401 before the upgrade (default), or
                         upgrade + error unauthorized + close 4001
  --help                 show this help
`;

/** Settings from the command line. */
export interface EngineCliOptions {
  /** Interface to listen on. */
  host: string;
  /** TCP port (0: ephemeral). */
  port: number;
  /** Upgrade path. */
  path: string;
  /** Explicit token, or null to use `<tlsDir>/token`. */
  token: string | null;
  /** Directory of the TLS files and the token file. */
  tlsDir: string;
  /** Conversation mode. */
  mode: ConversationMode;
  /** Greeting text; undefined keeps the engine's default; null disables it. */
  greeting: string | null | undefined;
  /** The client tool each answer calls first, or null. */
  demoTool: string | null;
  /** espeak-ng voice. */
  voice: string;
  /** Output sample rate in Hz. */
  outputRate: number;
  /** How bad credentials are refused. */
  authFailure: "http_401" | "close_4001";
}

/** Result of {@link parseEngineArgs}. */
export type EngineCliParse =
  | { kind: "run"; options: EngineCliOptions }
  | { kind: "help" }
  | { kind: "error"; message: string };

function integer(value: string, name: string, min: number, max: number): number | string {
  if (!/^\d+$/.test(value)) return `--${name} must be an integer`;
  const n = Number(value);
  if (n < min || n > max) return `--${name} must be within ${min}-${max}`;
  return n;
}

/**
 * Parses the engine's command line.
 *
 * @param args arguments after the script name (`Deno.args`)
 * @returns the options to run with, a help request, or a one-line usage error
 */
export function parseEngineArgs(args: string[]): EngineCliParse {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      strict: true,
      allowPositionals: false,
      options: {
        host: { type: "string" },
        port: { type: "string" },
        path: { type: "string" },
        token: { type: "string" },
        "tls-dir": { type: "string" },
        mode: { type: "string" },
        greeting: { type: "string" },
        "no-greeting": { type: "boolean" },
        "demo-tool": { type: "string" },
        voice: { type: "string" },
        "output-rate": { type: "string" },
        "auth-failure": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    }));
  } catch (err) {
    return { kind: "error", message: (err as Error).message.split("\n")[0] };
  }
  if (values.help) return { kind: "help" };

  const port = integer(values.port ?? "8788", "port", 0, 65535);
  if (typeof port === "string") return { kind: "error", message: port };
  const outputRate = integer(
    values["output-rate"] ?? "24000",
    "output-rate",
    MIN_SAMPLE_RATE,
    MAX_SAMPLE_RATE,
  );
  if (typeof outputRate === "string") return { kind: "error", message: outputRate };
  const mode = values.mode ?? "answer";
  if (mode !== "answer" && mode !== "echo") {
    return { kind: "error", message: "--mode must be answer or echo" };
  }
  const path = values.path ?? "/v0";
  if (!path.startsWith("/")) return { kind: "error", message: "--path must start with /" };
  if (values.greeting !== undefined && values["no-greeting"]) {
    return { kind: "error", message: "--greeting and --no-greeting are mutually exclusive" };
  }
  if (values.token !== undefined && !/^[\x21-\x7e]{1,4096}$/.test(values.token)) {
    return { kind: "error", message: "--token must be visible ASCII characters without spaces" };
  }
  const host = values.host ?? "127.0.0.1";
  if (host === "") return { kind: "error", message: "--host must not be empty" };
  const voice = values.voice ?? "en-us";
  if (!/^[A-Za-z0-9_+\-./]+$/.test(voice)) {
    return { kind: "error", message: "--voice is not a valid voice name" };
  }
  const authFailure = values["auth-failure"] ?? "http_401";
  if (authFailure !== "http_401" && authFailure !== "close_4001") {
    return { kind: "error", message: "--auth-failure must be http_401 or close_4001" };
  }
  const demoTool = values["demo-tool"] ?? null;
  if (demoTool !== null && !/^[A-Za-z0-9_.-]{1,64}$/.test(demoTool)) {
    return { kind: "error", message: "--demo-tool must be 1-64 letters, digits, '_', '.' or '-'" };
  }
  const tlsDir = values["tls-dir"] ?? ".data/reference-engine";
  if (tlsDir === "") return { kind: "error", message: "--tls-dir must not be empty" };

  return {
    kind: "run",
    options: {
      host,
      port,
      path,
      token: values.token ?? null,
      tlsDir,
      mode,
      greeting: values["no-greeting"] ? null : values.greeting,
      demoTool,
      voice,
      outputRate,
      authFailure,
    },
  };
}
