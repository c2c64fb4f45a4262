/**
 * What every bridge shares about tool calls: a {@link ToolCall} whose answer goes out once, and the text a
 * vendor that takes text (all three) gets for a result.
 *
 * @module
 */
import type { ToolCall, ToolResult } from "./types.ts";

/** A call no client answered within this is answered with an error. */
export const TOOL_CALL_TIMEOUT_MS = 10_000;
/** Calls waiting for an answer at once, per session (more: answered with an error at once). */
export const MAX_OPEN_TOOL_CALLS = 64;

/** The error results the service gives for its clients (provider-agnostic text the agent can act on). */
export const TOOL_ERRORS = {
  noClient: "No client is connected to run this tool.",
  timeout: `No client answered this tool call within ${TOOL_CALL_TIMEOUT_MS / 1000} seconds.`,
  ended: "The session ended before a client answered this tool call.",
  busy: "Too many tool calls are waiting for the client.",
} as const;

/** Largest tool call id and name taken from an engine (longer ones are refused as malformed). */
export const MAX_TOOL_ID_CHARS = 256;

/**
 * A tool call whose `respond` runs `send` once (later answers are ignored). Null when the call is malformed:
 * no id, no name, or arguments that are not an object.
 */
export function toolCall(
  fields: { callId: unknown; name: unknown; arguments: unknown },
  send: (result: ToolResult) => void,
): ToolCall | null {
  const { callId, name } = fields;
  const args = fields.arguments;
  if (typeof callId !== "string" || callId === "" || callId.length > MAX_TOOL_ID_CHARS) return null;
  if (typeof name !== "string" || name === "" || name.length > MAX_TOOL_ID_CHARS) return null;
  if (args === null || typeof args !== "object" || Array.isArray(args)) return null;
  let answered = false;
  return {
    callId,
    name,
    arguments: args as Record<string, unknown>,
    respond(result) {
      if (answered) return;
      answered = true;
      send(result);
    },
  };
}

/** A result as text: a string as it is, nothing as "", anything else as JSON. */
export function toolOutputText(output: unknown): string {
  if (typeof output === "string") return output;
  if (output === undefined || output === null) return "";
  try {
    return JSON.stringify(output) ?? "";
  } catch {
    return String(output);
  }
}

/**
 * The `client_tool_result` both agent vendors take (Cartesia Managed Agents and ElevenLabs Agents name it and
 * its fields alike): the call's id, the result as text, and whether it is an error.
 */
export function clientToolResult(toolCallId: string, result: ToolResult): Record<string, unknown> {
  return {
    type: "client_tool_result",
    tool_call_id: toolCallId,
    result: toolOutputText(result.output),
    is_error: result.isError,
  };
}

/** Parses a JSON-encoded arguments string (OpenAI's form); null when it is not a JSON object. */
export function parseArguments(text: unknown): Record<string, unknown> | null {
  if (typeof text !== "string") return null;
  if (text.trim() === "") return {};
  try {
    const v = JSON.parse(text);
    return v !== null && typeof v === "object" && !Array.isArray(v) ? v : null;
  } catch {
    return null;
  }
}
