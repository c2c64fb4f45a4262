/**
 * `sessions get`: a session's status.
 *
 * @module
 */
import { API_OPTIONS, clientFromFlags } from "../api_client.ts";
import type { CommandSpec } from "../command.ts";
import { formatTime, printDetails, printJson } from "../output.ts";
import { startProgress } from "../progress.ts";

/** `sessions get`. */
export const sessionsGet: CommandSpec = {
  path: ["sessions", "get"],
  summary: "Show a session's status (GET /v1/sessions/{session_id}); never its token",
  description: "Another project's session answers 404 SVC_SESSION_NOT_FOUND. Needs scope sessions:read.",
  positionals: [{ name: "session_id", help: "the session's id (session:…)" }],
  options: API_OPTIONS,
  examples: ["deno task cli sessions get session:3kTMd9xq0bq1h7nYQ2Lw6A"],
  async run({ values, positionals }, io) {
    const client = clientFromFlags(values, io, startProgress(io, "", false).note);
    const session = await client.getSession(positionals[0]);
    if (values.json) printJson(io, session);
    else {
      printDetails(io, [
        ["session_id", session.session_id],
        ["status", session.status],
        ["provider_type", session.provider_type],
        ["transport", session.transport],
        ["created_at", formatTime(session.created_at)],
        ["started_at", formatTime(session.started_at)],
        ["ended_at", formatTime(session.ended_at)],
        ["end_reason", session.end_reason ?? "-"],
      ]);
    }
    return 0;
  },
};
