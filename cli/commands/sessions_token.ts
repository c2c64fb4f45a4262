/**
 * `sessions token`: mints a fresh client token and session token for an active session.
 *
 * @module
 */
import { API_OPTIONS, clientFromFlags } from "../api_client.ts";
import type { CommandSpec } from "../command.ts";
import { formatTime, printDetails, printJson } from "../output.ts";
import { startProgress } from "../progress.ts";

/** `sessions token`. */
export const sessionsToken: CommandSpec = {
  path: ["sessions", "token"],
  summary: "Mint a fresh 5-minute client token (POST /v1/sessions/{session_id}/client-token)",
  description:
    "Only for active sessions (else 409). The tokens are media-plane credentials of this one session,\nvalid 5 minutes. Needs scope sessions:write.",
  positionals: [{ name: "session_id", help: "the session's id (session:…)" }],
  options: API_OPTIONS,
  examples: ["deno task cli sessions token session:3kTMd9xq0bq1h7nYQ2Lw6A --json | jq -r .client_token"],
  async run({ values, positionals }, io) {
    const client = clientFromFlags(values, io, startProgress(io, "", false).note);
    const token = await client.createClientToken(positionals[0]);
    if (values.json) printJson(io, token);
    else {
      printDetails(io, [
        ["transport", token.transport],
        ["expires_at", formatTime(token.expires_at)],
        ["client_token", token.client_token],
        ["session_token", token.stream_metadata.session_token],
        ["sfu_endpoint", token.stream_metadata.sfu_endpoint ?? "-"],
        ["media_url", token.stream_metadata.media_url ?? "-"],
      ]);
    }
    return 0;
  },
};
