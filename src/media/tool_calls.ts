/**
 * Tool calls between a session's engine and its clients. The engine's call goes to every connected client
 * as `{"type":"tool_call","call_id","name","arguments"}`; the first `{"type":"tool_result","call_id",
 * "output","is_error"?}` a client sends back answers it (in the engine's own format, by the bridge). With no
 * client connected the engine gets an error result at once, and one that no client answers within
 * `TOOL_CALL_TIMEOUT_MS` (10 s) gets an error result then, so the agent goes on either way.
 *
 * Protocol: docs/media-plane.md ("Tool calls").
 *
 * @module
 */
import { type Clock, systemClock } from "../clock.ts";
import { MAX_OPEN_TOOL_CALLS, TOOL_CALL_TIMEOUT_MS, TOOL_ERRORS } from "../providers/tool_calls.ts";
import type { ToolCall } from "../providers/types.ts";
import type { ClientMessage } from "./client_messages.ts";

/** The `tool_call` message clients receive. */
export interface ToolCallMessage {
  type: "tool_call";
  call_id: string;
  name: string;
  arguments: Record<string, unknown>;
}

/** What the broker needs. */
export interface ToolCallsDeps {
  /** Sends a message to every connected client; returns how many it reached. */
  deliver(message: ToolCallMessage): number;
  clock?: Clock;
  timeoutMs?: number;
}

/** One session's open tool calls. */
export class ToolCalls {
  readonly #d: ToolCallsDeps;
  readonly #open = new Map<string, { call: ToolCall; stop: AbortController }>();
  #closed = false;

  constructor(deps: ToolCallsDeps) {
    this.#d = deps;
  }

  /** Calls waiting for a client's answer now. */
  get open(): number {
    return this.#open.size;
  }

  /** Forwards an engine's call to the clients (or answers it with an error at once). */
  call(call: ToolCall): void {
    if (this.#closed) return call.respond({ output: TOOL_ERRORS.ended, isError: true });
    if (this.#open.has(call.callId)) return; // the engine repeated itself: the first one is pending
    if (this.#open.size >= MAX_OPEN_TOOL_CALLS) {
      return call.respond({ output: TOOL_ERRORS.busy, isError: true });
    }
    const reached = this.#d.deliver({
      type: "tool_call",
      call_id: call.callId,
      name: call.name,
      arguments: call.arguments,
    });
    if (reached === 0) return call.respond({ output: TOOL_ERRORS.noClient, isError: true });
    const stop = new AbortController();
    this.#open.set(call.callId, { call, stop });
    const clock = this.#d.clock ?? systemClock;
    clock.sleep(this.#d.timeoutMs ?? TOOL_CALL_TIMEOUT_MS, stop.signal).then(() => {
      if (this.#open.get(call.callId)?.call !== call) return;
      this.#open.delete(call.callId);
      call.respond({ output: TOOL_ERRORS.timeout, isError: true });
    }, () => {/* answered */});
  }

  /**
   * A client's `tool_result`: answers its open call (`call_id` a string; `output` any JSON value, absent →
   * null; `is_error` a boolean when present). An unknown or already answered call, or a malformed message,
   * is ignored; returns whether it answered a call.
   */
  result(message: ClientMessage): boolean {
    const callId = message.call_id;
    if (typeof callId !== "string") return false;
    const isError = message.is_error ?? false;
    if (typeof isError !== "boolean") return false;
    const open = this.#open.get(callId);
    if (!open) return false;
    this.#open.delete(callId);
    open.stop.abort();
    open.call.respond({ output: message.output ?? null, isError });
    return true;
  }

  /** The session ends: every open call is answered with an error, and later ones at once. */
  close(): void {
    this.#closed = true;
    for (const { call, stop } of this.#open.values()) {
      stop.abort();
      call.respond({ output: TOOL_ERRORS.ended, isError: true });
    }
    this.#open.clear();
  }
}
