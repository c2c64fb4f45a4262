// @ts-check
// @ts-self-types="./tool_calls.d.ts"
/**
 * Tool calls in the browser player (both transports): the conversation engine's agent asks the page to run a
 * tool; the page answers. On the wire (the media WebSocket, or the SFU signalling WebSocket):
 *
 * - server → client `{"type":"tool_call","call_id":string,"name":string,"arguments":object}`
 * - client → server `{"type":"tool_result","call_id":string,"output":any,"is_error"?:boolean}`
 *
 * The player hands each call to `onToolCall`; the handler answers with `call.respond(output)` (one line), or
 * by returning the output (a value or a promise of one: a thrown error answers `is_error: true` with its
 * message). A call the page does not answer within 10 s is answered for it with an error, so the agent goes
 * on. Protocol: docs/media-plane.md ("Tool calls").
 *
 * @module
 */

/**
 * @typedef {object} ToolCall
 * @property {string} callId The engine's id of the call.
 * @property {string} name The tool's name.
 * @property {Record<string, unknown>} arguments The call's arguments.
 * @property {(output?: unknown, options?: { isError?: boolean }) => boolean} respond Answers the call
 *   (once): `output` is any JSON value; `isError` marks a failure. False when it was answered already or the
 *   connection is gone.
 */

/** Call ids remembered as answered (older ones are long expired on the server). */
const MAX_ANSWERED = 256;

/**
 * The tool-call handling of one player.
 *
 * @param {{ onToolCall?: (call: ToolCall) => unknown; socket: () => WebSocket | null }} options
 *   `socket` returns the player's current socket (the media or SFU signalling WebSocket), if any.
 */
export function createToolCalls(options) {
  /** @type {string[]} */
  const answered = [];

  /**
   * @param {string} callId
   * @param {unknown} output
   * @param {{ isError?: boolean }} [opts]
   */
  const respond = (callId, output, opts) => {
    if (typeof callId !== "string" || answered.includes(callId)) return false;
    answered.push(callId);
    if (answered.length > MAX_ANSWERED) answered.shift();
    /** @type {Record<string, unknown>} */
    const msg = { type: "tool_result", call_id: callId, output: output === undefined ? null : output };
    if (opts?.isError) msg.is_error = true;
    const ws = options.socket();
    if (!ws || ws.readyState !== WebSocket.OPEN) return false;
    ws.send(JSON.stringify(msg));
    return true;
  };

  /** @param {unknown} err */
  const message = (err) => (err instanceof Error ? err.message : String(err));

  return {
    /**
     * Handles a control message; true when it was a tool call. Without an `onToolCall` handler, calls are
     * left unanswered (another of the session's pages may answer them; the service answers an error after
     * 10 s otherwise).
     * @param {any} msg
     */
    handle(msg) {
      if (msg?.type !== "tool_call" || typeof msg.call_id !== "string") return false;
      if (!options.onToolCall) return true;
      const callId = msg.call_id;
      /** @type {ToolCall} */
      const call = {
        callId,
        name: String(msg.name ?? ""),
        arguments: msg.arguments !== null && typeof msg.arguments === "object" ? msg.arguments : {},
        respond: (output, opts) => respond(callId, output, opts),
      };
      let result;
      try {
        result = options.onToolCall(call);
      } catch (err) {
        call.respond(message(err), { isError: true });
        return true;
      }
      const thenable = /** @type {{ then?: unknown }} */ (result);
      if (result !== null && typeof result === "object" && typeof thenable.then === "function") {
        /** @type {Promise<unknown>} */ (result).then(
          (value) => value !== undefined && call.respond(value),
          (err) => call.respond(message(err), { isError: true }),
        );
      } else if (result !== undefined) call.respond(result);
      return true;
    },
    /** Answers a call by id (the player's `respondToolCall`). */
    respond,
  };
}
