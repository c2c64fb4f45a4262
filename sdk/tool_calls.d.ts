/**
 * Types of `sdk/tool_calls.js`, the tool-call handling the browser player uses (both transports). See
 * docs/media-plane.md, "Tool calls".
 *
 * @module
 */

import type { ToolCall } from "./player.d.ts";
export type { ToolCall } from "./player.d.ts";

/** The tool-call handling of one player. */
export interface ToolCalls {
  /** Handles a control message; true when it was a tool call. */
  handle(message: unknown): boolean;
  /** Answers a call by id. */
  respond(callId: string, output?: unknown, options?: { isError?: boolean }): boolean;
}

/**
 * Creates the tool-call handling of one player: `socket` returns its current socket (the media or SFU
 * signalling WebSocket), if any. A handler may answer with `call.respond(output)` or by returning the output (or a promise of
 * it; a throw answers `is_error: true` with its message).
 */
export declare function createToolCalls(options: {
  onToolCall?: (call: ToolCall) => unknown;
  socket: () => WebSocket | null;
}): ToolCalls;
