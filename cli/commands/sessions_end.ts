/**
 * `sessions end`: ends an active session.
 *
 * @module
 */
import { API_OPTIONS, clientFromFlags } from "../api_client.ts";
import type { CommandSpec } from "../command.ts";
import { formatTime, printDetails, printJson } from "../output.ts";
import { startProgress } from "../progress.ts";

/** `sessions end`. */
export const sessionsEnd: CommandSpec = {
  path: ["sessions", "end"],
  summary: "End an active session (POST /v1/sessions/{session_id}/end)",
  description:
    "Graceful by default (up to 10 s; ended_with_warnings if the engine does not finish in time).\nA second end answers 409 SVC_SESSION_ENDED. Needs scope sessions:write.",
  positionals: [{ name: "session_id", help: "the session's id (session:…)" }],
  options: [
    { name: "force", type: "boolean", help: "skip the graceful handshake and close the engine at once" },
    ...API_OPTIONS,
  ],
  examples: ["deno task cli sessions end session:3kTMd9xq0bq1h7nYQ2Lw6A --force"],
  async run({ values, positionals }, io) {
    const client = clientFromFlags(values, io, startProgress(io, "", false).note);
    const ended = await client.endSession(positionals[0], { force: values.force === true });
    if (values.json) printJson(io, ended);
    else {
      printDetails(io, [
        ["session_id", ended.session_id],
        ["status", ended.status],
        ["ended_at", formatTime(ended.ended_at)],
        ["end_reason", ended.end_reason ?? "-"],
        ["duration_s", ended.duration_s?.toString()],
        ["chunks_rendered", ended.chunks_rendered?.toString()],
        ["warning", ended.warning],
      ]);
    }
    return 0;
  },
};
