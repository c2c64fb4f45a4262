/**
 * The vendor1 realtime bridge: the vendor's realtime WebSocket (GA interface) as a provider connection.
 *
 * - Credential: the caller's ephemeral client secret, in the `Authorization: Bearer` header of the upgrade
 *   (the vendor's server-side presentation), nowhere else; written from its holder's bytes (`../wire/`). URL: `SVC_VENDOR1_REALTIME_URL` with the model
 *   `SVC_VENDOR1_REALTIME_MODEL` as its `model` query parameter (every official client sends one; a URL
 *   that names a model already is used as it is). A vendor that says the model is missing or unknown
 *   answers `400 SVC_PROVIDER_MISCONFIGURED`.
 * - Handshake: `session.created` announces the session's audio formats (PCM16 24 kHz, or G.711 µ-law/A-law
 *   8 kHz), which the bridge adopts; its server-side voice detection settings say whether speech cuts the
 *   agent off.
 * - Media: microphone PCM (24 kHz) → `input_audio_buffer.append`; `response.output_audio.delta` → the
 *   avatar's speech, one response per vendor response.
 * - Barge-in: `input_audio_buffer.speech_started` flushes the responses still playing, whatever the session's
 *   `interrupt_response` (as the vendor's own agents SDK does; with `false` the vendor does not cancel its
 *   response, so the bridge sends `response.cancel`); once the media plane reports how much of the cut
 *   response was heard, `conversation.item.truncate` tells the vendor.
 * - Tools: a completed function call (`response.function_call_arguments.done`, or the `function_call` item
 *   of `response.output_item.done`) goes to the session's clients; its result comes back as
 *   `conversation.item.create` (`function_call_output`) and, once no call is left open and no response is
 *   running, `response.create`.
 * - Transcripts: the agent's audio transcript and the user's input transcription, per conversation item.
 * - Ending: a close with 1000, or 1001 at the vendor's session time limit, ends the session normally; a
 *   quota `error` followed by a close ends it as `engine_quota_exceeded`; any other close is an engine
 *   failure. Keepalive: WebSocket ping frames.
 *
 * @module
 */
import { AgentAudioDecoder, SERVICE_INPUT_RATE, UserAudioEncoder } from "../audio/format.ts";
import { AgentTurns } from "../agent_turns.ts";
import { parseArguments, toolCall, toolOutputText } from "../tool_calls.ts";
import type { BridgeFactory, ConnectRequest, ProviderClosure, ToolResult } from "../types.ts";
import type { ProviderSettings } from "../definitions/provider_types.ts";
import { type FailStart, VendorBridge, type VendorHandshake } from "../wire/bridge.ts";
import { BridgeConnection, type ConnectionContext } from "../wire/connection.ts";
import {
  type HandshakeStep,
  mentionsQuota,
  startErrors,
  type StartFailure,
  vendorStartFailure,
} from "../wire/handshake.ts";
import type { Closed, Frame, WireSocket } from "../wire/wire_socket.ts";
import { jsonMessage, obj } from "../wire/json.ts";
import { endpointOf } from "../wire/endpoint.ts";
import { CLIENT_EVENTS, is, readSession, SERVER_EVENTS, type SessionFacts } from "./events.ts";

const str = (v: unknown): string => typeof v === "string" ? v : "";

/**
 * Error codes (and close reasons, `invalid_request_error.<code>`) of a missing or unknown model: a
 * model-less URL answers `missing_model` and close 4000, an unknown model `invalid_model` and close 4000
 * (captured against the vendor's API, 2026-09-18, probes 11b and 11; docs/providers.md).
 */
const MODEL_ERRORS = /\b(missing_model|invalid_model|model_not_found)\b/;

/** The realtime URL with `model` as its `model` query parameter, unless the URL names a model already. */
export function vendor1Url(base: string, model: string): string {
  const url = new URL(base);
  if (!url.searchParams.has("model")) url.searchParams.set("model", model);
  return url.href;
}

/** The start failure map: the model errors first, then the one every vendor bridge shares. */
function startFailure(f: StartFailure) {
  if (f.kind === "closed" && MODEL_ERRORS.test(f.reason)) return startErrors.model();
  return vendorStartFailure(f);
}

/** The bridge of `vendor1_realtime` (found by its name: `../bridges.ts`). */
export const createBridge: BridgeFactory<"vendor1_realtime"> = (deps) => new Vendor1RealtimeBridge(deps);

/** Connects sessions to the vendor1 realtime engine. */
export class Vendor1RealtimeBridge extends VendorBridge<SessionFacts, ProviderSettings["vendor1_realtime"]> {
  protected prepare(request: ConnectRequest, fail: FailStart): VendorHandshake<SessionFacts> {
    // The secret goes from its holder into the upgrade's Authorization header as bytes.
    const secret = request.credentials.secret("client_secret");
    if (!secret) throw fail(startErrors.unusable(), "invalid");
    return {
      timeoutMs: request.timeoutMs,
      endpoint: endpointOf(
        vendor1Url(this.deps.settings.url, this.deps.settings.model),
      ),
      headers: [{ name: "Authorization", value: ["Bearer ", secret] }],
      opened: () => {},
      message: (frame) => sessionCreated(frame),
    };
  }

  protected override startFailure(f: StartFailure) {
    return startFailure(f);
  }

  protected open(socket: WireSocket, ctx: ConnectionContext, ready: SessionFacts): Vendor1Connection {
    return new Vendor1Connection(socket, ctx, ready);
  }
}

/** A message before ready: `session.created` (ready), an `error` (failure), or anything else (ignored). */
function sessionCreated(frame: Frame): HandshakeStep<SessionFacts> {
  if (typeof frame !== "string") return undefined;
  const msg = obj(JSON.parse(frame));
  if (is(msg.type, SERVER_EVENTS.error)) {
    const e = obj(msg.error);
    if (MODEL_ERRORS.test(str(e.code))) return { fail: startErrors.model() };
    return {
      fail: mentionsQuota(e.code, e.type, e.message) ? startErrors.quota() : startErrors.downstream(),
    };
  }
  if (!is(msg.type, SERVER_EVENTS.sessionCreated)) return undefined;
  const facts = readSession(msg.session);
  return facts ? { ready: facts } : { fail: startErrors.unsupported() };
}

/** One audio part of a response, for truncation. */
interface Part {
  itemId: string;
  contentIndex: number;
  samples: number;
}

/** Responses whose parts are remembered (for truncation) at most; tool call ids likewise. */
const MAX_TRACKED = 16;

class Vendor1Connection extends BridgeConnection {
  /** The agent's audio chunks, decoded into one reused buffer (the media plane copies them). */
  readonly #audio = new AgentAudioDecoder();
  readonly inputSampleRate = SERVICE_INPUT_RATE;
  readonly outputSampleRate: number;
  readonly #encoder: UserAudioEncoder;
  readonly #turns: AgentTurns;
  readonly #parts = new Map<string, Part[]>();
  readonly #cancelled = new Set<string>();
  readonly #agentText = new Map<string, string>();
  readonly #userText = new Map<string, string>();
  #expired = false;
  /** A response is being generated (between `response.created` and `response.done`). */
  #responding = false;
  /** Tool calls forwarded and not answered yet. */
  readonly #openCalls = new Set<string>();
  /** Tool calls already forwarded (a call is announced twice: arguments done, then its item done). */
  readonly #seenCalls = new Set<string>();
  /** Every open call was answered while a response ran: ask for one once it is done. */
  #wantResponse = false;

  constructor(socket: WireSocket, ctx: ConnectionContext, readonly session: SessionFacts) {
    super(socket, ctx);
    this.outputSampleRate = session.output.sampleRate;
    this.#encoder = new UserAudioEncoder(session.input);
    this.#turns = new AgentTurns(ctx.events);
  }

  sendUserAudio(pcm: Uint8Array): void {
    if (!this.canSendAudio(this.session.input.sampleRate * 3)) return;
    const audio = this.#encoder.encode(pcm);
    if (audio) this.sendJson({ type: CLIENT_EVENTS.appendAudio, audio });
  }

  override reportPlayed(responseId: string, playedMs: number, interrupted: boolean): void {
    this.#turns.played(responseId);
    if (interrupted) this.#truncate(responseId, playedMs);
    this.#parts.delete(responseId);
  }

  /** Tells the vendor how much of the cut response's audio the user heard (the part playing at the cut). */
  #truncate(responseId: string, playedMs: number): void {
    let remaining = Math.max(0, playedMs);
    for (const part of this.#parts.get(responseId) ?? []) {
      const ms = part.samples * 1000 / this.outputSampleRate;
      if (remaining < ms) {
        this.sendJson({
          type: CLIENT_EVENTS.truncate,
          item_id: part.itemId,
          content_index: part.contentIndex,
          audio_end_ms: Math.floor(remaining),
        });
        return;
      }
      remaining -= ms;
    }
  }

  protected onFrame(frame: Frame): void {
    const msg = jsonMessage(frame);
    if (!msg) return;
    const type = msg.type;
    const events = this.ctx.events;
    if (is(type, SERVER_EVENTS.audioDelta)) {
      // (every delta names its response; one that does not belongs to the response being spoken)
      const id = str(msg.response_id) || this.#turns.open || this.#start();
      if (this.#cancelled.has(id) || this.closing) return;
      if (this.#turns.open !== id) this.#start(id);
      const pcm = this.#audio.decode(str(msg.delta), this.session.output);
      this.#addPart(id, str(msg.item_id), Number(msg.content_index ?? 0), pcm.length);
      events.onAudio(pcm, id);
    } else if (is(type, SERVER_EVENTS.responseCreated)) {
      this.#responding = true;
      const id = str(obj(msg.response).id);
      if (id && !this.#cancelled.has(id)) this.#start(id);
    } else if (is(type, SERVER_EVENTS.responseDone)) {
      this.#responding = false;
      const response = obj(msg.response);
      const id = str(response.id);
      if (this.#turns.open !== null && (!id || this.#turns.open === id)) {
        this.#turns.done(doneStatus(response.status));
      }
      if (this.#wantResponse && this.#openCalls.size === 0) this.#requestResponse();
    } else if (is(type, SERVER_EVENTS.speechStarted)) {
      // The user speaks: what the avatar still has to say goes, whatever `interrupt_response` says (the
      // vendor's agents SDK stops its playback here too). With `interrupt_response` the vendor cancels its
      // response itself; without, the bridge does. Late audio of the cut response is dropped either way.
      const open = this.#turns.open;
      if (open) this.#remember(this.#cancelled, open);
      if (!this.session.interruptResponse && this.#responding) {
        this.sendJson({ type: CLIENT_EVENTS.cancelResponse });
      }
      this.#turns.interrupt();
    } else if (is(type, SERVER_EVENTS.functionCallDone)) {
      this.#toolCall(msg.call_id, msg.name, msg.arguments);
    } else if (is(type, SERVER_EVENTS.outputItemDone)) {
      const item = obj(msg.item);
      if (item.type === "function_call" && item.status === "completed") {
        this.#toolCall(item.call_id, item.name, item.arguments);
      }
    } else if (is(type, SERVER_EVENTS.agentTranscriptDelta)) {
      this.#transcript(this.#agentText, "agent", str(msg.item_id), str(msg.delta), null);
    } else if (is(type, SERVER_EVENTS.agentTranscriptDone)) {
      this.#transcript(this.#agentText, "agent", str(msg.item_id), "", msg.transcript);
    } else if (is(type, SERVER_EVENTS.userTranscriptDelta)) {
      this.#transcript(this.#userText, "user", str(msg.item_id), str(msg.delta), null);
    } else if (is(type, SERVER_EVENTS.userTranscriptDone)) {
      this.#transcript(this.#userText, "user", str(msg.item_id), "", msg.transcript);
    } else if (is(type, SERVER_EVENTS.error)) {
      const e = obj(msg.error);
      if (e.code === "session_expired") this.#expired = true;
      // Errors are recoverable by themselves; a quota error followed by a close ends the session so.
      if (mentionsQuota(e.code, e.type)) this.noteQuota();
      this.ctx.logger.info("engine error", {
        session_id: this.ctx.sessionId,
        code: str(e.code).slice(0, 64),
        type: str(e.type).slice(0, 64),
      });
    }
  }

  /** Forwards a completed function call (once per call id); malformed ones get an error at once. */
  #toolCall(callId: unknown, name: unknown, argumentsText: unknown): void {
    if (typeof callId !== "string" || this.#seenCalls.has(callId)) return;
    this.#remember(this.#seenCalls, callId);
    const args = parseArguments(argumentsText);
    const send = (result: ToolResult) => this.#toolResult(callId, result);
    const call = toolCall({ callId, name, arguments: args ?? {} }, send);
    if (!call) return;
    this.#openCalls.add(callId);
    if (args === null) {
      return call.respond({ output: "The tool call's arguments are not a JSON object.", isError: true });
    }
    this.ctx.events.onToolCall(call);
  }

  /** A call's result: the `function_call_output` item, then a response once nothing is pending. */
  #toolResult(callId: string, result: ToolResult): void {
    this.#openCalls.delete(callId);
    if (this.closing || this.stopped.signal.aborted) return;
    const text = toolOutputText(result.output);
    this.sendJson({
      type: CLIENT_EVENTS.createItem,
      item: {
        type: "function_call_output",
        call_id: callId,
        // The vendor takes text only: an error is marked as such for the model.
        output: result.isError ? JSON.stringify({ error: text }) : text,
      },
    });
    if (this.#openCalls.size > 0) return;
    if (this.#responding) this.#wantResponse = true;
    else this.#requestResponse();
  }

  #requestResponse(): void {
    this.#wantResponse = false;
    this.sendJson({ type: CLIENT_EVENTS.createResponse });
  }

  #start(id?: string): string {
    const started = this.#turns.start(id);
    this.#parts.set(started, []);
    while (this.#parts.size > MAX_TRACKED) this.#parts.delete(this.#parts.keys().next().value!);
    return started;
  }

  #addPart(responseId: string, itemId: string, contentIndex: number, samples: number): void {
    const parts = this.#parts.get(responseId);
    if (!parts) return;
    const last = parts.at(-1);
    if (last && last.itemId === itemId && last.contentIndex === contentIndex) last.samples += samples;
    else parts.push({ itemId, contentIndex, samples });
  }

  /** Transcripts carry the whole text so far of their item: deltas are appended, `done` replaces. */
  #transcript(
    texts: Map<string, string>,
    role: "user" | "agent",
    itemId: string,
    delta: string,
    final: unknown,
  ): void {
    if (!itemId) return;
    const done = typeof final === "string";
    const text = done ? final as string : (texts.get(itemId) ?? "") + delta;
    if (done) texts.delete(itemId);
    else {
      texts.set(itemId, text);
      while (texts.size > MAX_TRACKED) texts.delete(texts.keys().next().value!);
    }
    this.ctx.events.onTranscript({ role, turnId: itemId, text, final: done });
  }

  #remember(set: Set<string>, id: string): void {
    set.add(id);
    if (set.size > MAX_TRACKED) set.delete(set.values().next().value!);
  }

  protected closure(c: Closed): ProviderClosure {
    if (c.code === 1000) return { kind: "ended_by_engine", reason: "engine_closed" };
    // The vendor closes with 1001 when the session reaches its maximum duration.
    if (c.code === 1001) {
      return { kind: "ended_by_engine", reason: this.#expired ? "max_duration" : "going_away" };
    }
    return { kind: "failed", reason: `engine_closed_${c.code || 1006}` };
  }
}

/** The vendor's response status as the protocol V0 names it. */
function doneStatus(status: unknown): string {
  if (status === "cancelled") return "cancelled";
  if (status === "failed") return "failed";
  return "completed";
}
