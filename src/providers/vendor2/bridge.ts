/**
 * The vendor2 bridge: the vendor's managed-agents WebSocket (API version 2026-08-14) as a provider
 * connection.
 *
 * - Credential: the caller's short-lived access token (agent grant), in the `access_token` query parameter,
 *   the vendor's documented presentation for tokens (an `X-API-Key` header is for API keys only); the URL is
 *   `SVC_VENDOR2_URL/<agent_id>?cartesia_version=…&access_token=…`, never logged; the token is written into
 *   the request from its holder's bytes ({@link vendor2Endpoint}).
 * - Handshake: `session_create` (audio `pcm_24000`) → `session_ready`, which echoes the input format; the
 *   agent's audio comes back in that same format.
 * - Media: microphone PCM → `audio_input`, and silence where the microphone leaves a real gap (the vendor
 *   wants audio continuously and closes idle sockets; `../feeder.ts`); `audio_output` → the avatar's speech,
 *   one response per assistant turn.
 * - Barge-in: `audio_output_clear` flushes what is still playing. Transcripts: assistant text deltas and the
 *   final text of each turn (`turn_ended`), for both roles.
 * - Tools: `client_tool_call` goes to the session's clients; when the agent `expects_response`, the result
 *   goes back as `client_tool_result`.
 * - Quota: a refused upgrade (HTTP 429), or an `error` whose status is 429 or whose code or text speaks of a
 *   quota or concurrency limit (the vendor's generic WebSocket error object, e.g. `concurrency_limited`),
 *   answers the start with 429; the same during a call, or a close whose reason says so, ends the session
 *   as `engine_quota_exceeded`.
 * - Ending: the agent hangs up with a normal close (1000); a fatal `error` is followed by 1008/1011, an
 *   engine failure. Keepalive: WebSocket ping frames.
 *
 * @module
 */
import {
  AgentAudioDecoder,
  parseRateFormat,
  SERVICE_INPUT_RATE,
  UserAudioEncoder,
  type WireAudioFormat,
} from "../audio/format.ts";
import { AgentTurns } from "../agent_turns.ts";
import { SilenceFeeder } from "../feeder.ts";
import { clientToolResult, toolCall } from "../tool_calls.ts";
import type { BridgeFactory, ConnectRequest, ProviderClosure } from "../types.ts";
import type { ProviderSettings } from "../definitions/provider_types.ts";
import { type FailStart, VendorBridge, type VendorHandshake } from "../wire/bridge.ts";
import { BridgeConnection, type ConnectionContext } from "../wire/connection.ts";
import { type HandshakeStep, mentionsQuota, startErrors } from "../wire/handshake.ts";
import type { Endpoint } from "../wire/endpoint.ts";
import type { Closed, Frame, WireSocket } from "../wire/wire_socket.ts";
import { type Json, jsonMessage, obj } from "../wire/json.ts";
import { endpointOf } from "../wire/endpoint.ts";
import { ByteBuffer, formEncode } from "../../auth/credential_bytes.ts";

/** The API version whose protocol this bridge speaks. */
export const VENDOR2_API_VERSION = "2026-08-14";
/** The input format the bridge asks for (the agent answers in the same one). */
export const VENDOR2_INPUT_FORMAT = "pcm_24000";

/** The agent's WebSocket URL: the base, the agent id as a path segment, the version and the token. */
export function vendor2Url(base: string, agentId: string, accessToken: string): string {
  const url = new URL(base);
  url.pathname = `${url.pathname.replace(/\/+$/, "")}/${encodeURIComponent(agentId)}`;
  url.searchParams.set("cartesia_version", VENDOR2_API_VERSION);
  url.searchParams.set("access_token", accessToken);
  return url.href;
}

/**
 * The endpoint of {@link vendor2Url} for a token given as bytes: the URL is built around a random marker,
 * whose place in the request target gets the token, form-encoded (as `URLSearchParams` writes it) into a
 * buffer of its own — `zero()` it once the upgrade is sent.
 */
export function vendor2Endpoint(
  base: string,
  agentId: string,
  accessToken: Uint8Array,
): { endpoint: Endpoint; zero(): void } {
  const marker = `t${crypto.randomUUID().replaceAll("-", "")}`;
  const endpoint = endpointOf(vendor2Url(base, agentId, marker));
  const target = endpoint.target.join("");
  const at = target.lastIndexOf(`access_token=${marker}`) + "access_token=".length;
  const token = new ByteBuffer(accessToken.length * 3 + 16);
  formEncode(accessToken, token);
  endpoint.target = [target.slice(0, at), token.view(), target.slice(at + marker.length)];
  return { endpoint, zero: () => token.zero() };
}

/** Connects sessions to vendor2 agents. */
export class Vendor2Bridge extends VendorBridge<WireAudioFormat, ProviderSettings["vendor2"]> {
  protected prepare(request: ConnectRequest, fail: FailStart): VendorHandshake<WireAudioFormat> {
    // The token goes from its holder into the upgrade's query as bytes.
    const token = request.credentials.secret("access_token");
    if (!token) throw fail(startErrors.unusable(), "invalid");
    const where = vendor2Endpoint(
      this.deps.settings.url,
      request.credentials.text("agent_id") ?? "",
      token,
    );
    return {
      timeoutMs: request.timeoutMs,
      endpoint: where.endpoint,
      opened: (s) =>
        s.send(JSON.stringify({ type: "session_create", audio: { input_format: VENDOR2_INPUT_FORMAT } })),
      message: (frame) => sessionReady(frame),
      release: () => where.zero(),
    };
  }

  protected open(socket: WireSocket, ctx: ConnectionContext, ready: WireAudioFormat): Vendor2Connection {
    return new Vendor2Connection(socket, ctx, ready);
  }
}

/** The bridge of `vendor2` (found by its name: `../bridges.ts`). */
export const createBridge: BridgeFactory<"vendor2"> = (deps) => new Vendor2Bridge(deps);

/**
 * Whether an `error` speaks of a quota: the managed-agents `error {code, message, fatal}`, or the vendor's
 * generic WebSocket error object `{type:"error", done, status_code: 429, error_code: "concurrency_limited",
 * title, message}` (docs.cartesia.ai/use-the-api/api-errors).
 */
function quotaError(msg: Json): boolean {
  return msg.status_code === 429 || mentionsQuota(msg.code, msg.error_code, msg.title, msg.message);
}

/** A message before ready: `session_ready` (ready), a fatal `error` (failure), or anything else. */
function sessionReady(frame: Frame): HandshakeStep<WireAudioFormat> {
  if (typeof frame !== "string") return undefined;
  const msg = obj(JSON.parse(frame));
  if (msg.type === "error") {
    if (msg.fatal === false) return undefined;
    return { fail: quotaError(msg) ? startErrors.quota() : startErrors.downstream() };
  }
  if (msg.type !== "session_ready") return undefined;
  const announced = obj(msg.audio).input_format;
  const format = parseRateFormat(announced ?? VENDOR2_INPUT_FORMAT);
  return format ? { ready: format } : { fail: startErrors.unsupported() };
}

class Vendor2Connection extends BridgeConnection {
  /** The agent's audio chunks, decoded into one reused buffer (the media plane copies them). */
  readonly #audio = new AgentAudioDecoder();
  readonly inputSampleRate = SERVICE_INPUT_RATE;
  readonly outputSampleRate: number;
  readonly #encoder: UserAudioEncoder;
  readonly #turns: AgentTurns;
  readonly #feeder: SilenceFeeder;
  /** Assistant text of the turns in progress. */
  readonly #agentText = new Map<number, string>();

  constructor(socket: WireSocket, ctx: ConnectionContext, readonly format: WireAudioFormat) {
    super(socket, ctx);
    this.outputSampleRate = format.sampleRate;
    this.#encoder = new UserAudioEncoder(format);
    this.#turns = new AgentTurns(ctx.events);
    this.#feeder = new SilenceFeeder(
      ctx.clock,
      this.stopped.signal,
      (ms) => this.#send(this.#encoder.silence(ms)),
    );
  }

  sendUserAudio(pcm: Uint8Array): void {
    const audio = this.#encoder.encode(pcm);
    if (audio) this.#send(audio);
    this.#feeder.fed(pcm.byteLength * 500 / SERVICE_INPUT_RATE);
  }

  #send(audio: string): void {
    if (this.canSendAudio(this.format.sampleRate * 3)) this.sendJson({ type: "audio_input", audio });
  }

  override reportPlayed(responseId: string): void {
    this.#turns.played(responseId);
  }

  protected onFrame(frame: Frame): void {
    const msg = jsonMessage(frame);
    if (!msg) return;
    const events = this.ctx.events;
    switch (msg.type) {
      case "audio_output": {
        if (this.closing || typeof msg.audio !== "string") return;
        events.onAudio(this.#audio.decode(msg.audio, this.format), this.#turns.current());
        return;
      }
      case "audio_output_clear":
        this.#turns.interrupt();
        return;
      case "turn_started":
        if (msg.role === "assistant" && this.#turns.open === null) this.#turns.start(`turn_${msg.turn}`);
        return;
      case "turn_output_text_delta": {
        const turn = Number(msg.turn);
        const text = (this.#agentText.get(turn) ?? "") + String(msg.text ?? "");
        this.#agentText.set(turn, text);
        events.onTranscript({ role: "agent", turnId: `turn_${turn}`, text, final: false });
        return;
      }
      case "turn_ended": {
        const turn = Number(msg.turn);
        const agent = msg.role === "assistant";
        this.#agentText.delete(turn);
        if (typeof msg.text === "string") {
          events.onTranscript({
            role: agent ? "agent" : "user",
            turnId: `turn_${turn}`,
            text: msg.text,
            final: true,
          });
        }
        if (agent) this.#turns.done(msg.interrupted === true ? "interrupted" : "completed");
        return;
      }
      case "client_tool_call": {
        const id = msg.tool_call_id;
        // Without `expects_response` the tool completes on dispatch: the client's answer is not sent.
        const wanted = msg.expects_response !== false;
        const call = toolCall(
          { callId: id, name: msg.tool_name, arguments: msg.parameters ?? {} },
          (r) => {
            if (wanted && !this.closing) this.sendJson(clientToolResult(String(id), r));
          },
        );
        if (call) events.onToolCall(call);
        return;
      }
      case "error":
        if (quotaError(msg)) this.noteQuota();
        this.ctx.logger.info("engine error", {
          session_id: this.ctx.sessionId,
          code: String(msg.code ?? msg.error_code ?? "").slice(0, 64),
          fatal: msg.fatal === true,
        });
        return;
    }
  }

  protected closure(c: Closed): ProviderClosure {
    if (c.code !== 1000) return { kind: "failed", reason: `engine_closed_${c.code || 1006}` };
    // The agent hung up: a turn in progress ends with the close.
    for (const [turn, text] of this.#agentText) {
      this.ctx.events.onTranscript({ role: "agent", turnId: `turn_${turn}`, text, final: true });
    }
    this.#turns.done("completed");
    return { kind: "ended_by_engine", reason: "agent_hangup" };
  }
}
