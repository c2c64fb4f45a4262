/**
 * The vendor3 bridge: the vendor's conversational-agent WebSocket as a provider connection.
 *
 * - Where: a public agent at `SVC_VENDOR3_URL?agent_id=…`; a private agent through the caller's `signed_url`,
 *   used as given once its host, path and age are checked (`signed_url.ts`), or through a signed URL the
 *   service mints with the caller's `api_key` (`mint.ts`). Signed URLs carry a token in their query: no
 *   vendor URL is ever logged, and a signed URL (the caller's, or the mint's answer) stays bytes down to
 *   the upgrade request (`../wire/`).
 * - Handshake: `conversation_initiation_client_data` → `conversation_initiation_metadata`, which announces
 *   the agent's audio formats (agent-level settings: PCM 8–48 kHz or µ-law 8 kHz); the bridge resamples to
 *   and from them.
 * - Media: microphone PCM → `{user_audio_chunk}`, and silence where the microphone leaves a real gap (the
 *   vendor ends a conversation after 60 s without user input; `../feeder.ts`); `audio` events → the avatar's
 *   speech. The vendor has no "agent done" event: a response ends after half a second without its audio.
 * - Barge-in: `interruption` flushes what is still playing and drops later audio of the cut response
 *   (lower `event_id`). Transcripts: `agent_response` (and its corrections), `tentative_user_transcript`,
 *   `user_transcript`. An `audio` event's character `alignment` goes to lip sync with its chunk.
 * - Keepalive: every `ping` is answered with a `pong` carrying its `event_id`, plus WebSocket ping frames.
 * - Tools: `client_tool_call` goes to the session's clients; the result goes back as `client_tool_result`
 *   (the vendor's own client always answers, unknown tools with an error).
 * - Quota: the vendor reports spent credit as a *flat* `{"type":"error","message":"…exceeds your quota
 *   limit…"}` (no `error_event`), then closes (1002, or 1000), the close reason repeating it; a minted URL
 *   is refused with `401 {"detail":{"status":"quota_exceeded"}}`. Before ready that answers 429, after it
 *   the session ends as `engine_quota_exceeded`.
 * - Ending: a normal close (1000: the agent ended the call, or its maximum duration) ends the session; 1002,
 *   1008, 1011 or a drop is an engine failure.
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
import { clientToolResult, toolCall } from "../tool_calls.ts";
import { SILENCE_CHUNK_MS, SilenceFeeder } from "../feeder.ts";
import type { BridgeFactory, ConnectRequest, ProviderClosure } from "../types.ts";
import type { ProviderSettings } from "../definitions/provider_types.ts";
import { type FailStart, VendorBridge, type VendorHandshake } from "../wire/bridge.ts";
import { BridgeConnection, type ConnectionContext } from "../wire/connection.ts";
import { type HandshakeStep, mentionsQuota, startErrors } from "../wire/handshake.ts";
import type { Endpoint } from "../wire/endpoint.ts";
import type { Closed, Frame, WireSocket } from "../wire/wire_socket.ts";
import { type Json, jsonMessage, obj } from "../wire/json.ts";
import { endpointOf, endpointOfBytes } from "../wire/endpoint.ts";
import type { ByteBuffer } from "../../auth/credential_bytes.ts";
import { deadline, every } from "../wire/wait.ts";
import { MintError, mintSignedUrl } from "./mint.ts";
import { signedUrlProblem } from "../definitions/vendor3_signed_url.ts";
import { ApiError } from "../../errors.ts";

/** The subprotocol the vendor's own client offers. */
export const VENDOR3_SUBPROTOCOL = "convai";

/** A response ends after this long without its audio (the vendor sends no end-of-turn event). */
export const AGENT_AUDIO_GAP_MS = 500;

/** The audio formats `conversation_initiation_metadata` announces. */
interface Formats {
  input: WireAudioFormat;
  output: WireAudioFormat;
}

/** The public agent's conversation URL. */
export function vendor3PublicUrl(base: string, agentId: string): string {
  const url = new URL(base);
  url.searchParams.set("agent_id", agentId);
  return url.href;
}

/** The bridge of `vendor3` (found by its name: `../bridges.ts`). */
export const createBridge: BridgeFactory<"vendor3"> = (deps) => new Vendor3Bridge(deps);

/** Connects sessions to vendor3 agents. */
export class Vendor3Bridge extends VendorBridge<Formats, ProviderSettings["vendor3"]> {
  protected async prepare(request: ConnectRequest, failed: FailStart): Promise<VendorHandshake<Formats>> {
    const { clock, settings } = this.deps;
    const due = deadline(clock, request.timeoutMs);
    // Where to connect: the caller's signed URL, one minted with the caller's key, or the public agent. A
    // signed URL stays bytes (from the holder, or the mint's answer) down to the upgrade request.
    const credentials = request.credentials;
    const signed = credentials.secret("signed_url");
    const apiKey = credentials.secret("api_key");
    const agentId = credentials.text("agent_id") ?? "";
    let minted: ByteBuffer | null = null;
    let where: { endpoint: Endpoint; zero(): void } | null = null;
    try {
      if (signed) {
        const problem = signedUrlProblem(signed, settings.signedUrlHosts, clock.now());
        if (problem) throw failed(new ApiError("SVC_PROVIDER_MISCONFIGURED", problem), "signed_url");
        where = endpointOfBytes(signed);
      } else if (apiKey) {
        try {
          minted = await mintSignedUrl({
            apiUrl: settings.apiUrl,
            agentId,
            apiKey,
            signal: due.signal,
            caCerts: this.deps.caCerts,
          });
        } catch (err) {
          if (err instanceof MintError) throw failed(err.error, err.kind);
          throw err;
        }
        where = endpointOfBytes(minted.view());
      } else {
        where = { endpoint: endpointOf(vendor3PublicUrl(settings.url, agentId)), zero: () => {} };
      }
      const used = where;
      return {
        timeoutMs: request.timeoutMs,
        deadline: due.signal,
        endpoint: used.endpoint,
        // The vendor's client offers `convai`; servers that select no subprotocol are accepted too.
        protocols: [VENDOR3_SUBPROTOCOL],
        protocolOptional: true,
        opened: (s) => s.send(JSON.stringify({ type: "conversation_initiation_client_data" })),
        message: (frame, s) => initiationMetadata(frame, s),
        release: () => {
          used.zero();
          minted?.zero();
          due.stop();
        },
      };
    } catch (err) {
      where?.zero();
      minted?.zero();
      due.stop();
      throw err;
    }
  }

  protected open(socket: WireSocket, ctx: ConnectionContext, ready: Formats): Vendor3Connection {
    return new Vendor3Connection(socket, ctx, ready);
  }
}

/**
 * Whether an `error` speaks of a quota: the contract's `{"type":"error","error_event":{code, error_type,
 * message, reason}}` (agent.asyncapi.yaml `ErrorPayload`), or the flat `{"type":"error","message":"received
 * 1002 (protocol error) This request exceeds your quota limit.; then sent 1002 …"}` a spent quota really
 * arrives as (elevenlabs/elevenlabs-swift-sdk#160, elevenlabs/packages#911).
 */
function quotaError(msg: Json): boolean {
  const e = obj(msg.error_event);
  return mentionsQuota(e.error_type, e.message, e.reason, msg.message);
}

/** A message before ready: the metadata (ready), an `error` (failure), a `ping` (answered), or ignored. */
function initiationMetadata(frame: Frame, socket: WireSocket): HandshakeStep<Formats> {
  if (typeof frame !== "string") return undefined;
  const msg = obj(JSON.parse(frame));
  if (msg.type === "ping") {
    socket.send(JSON.stringify({ type: "pong", event_id: obj(msg.ping_event).event_id }));
    return undefined;
  }
  if (msg.type === "error") return { fail: quotaError(msg) ? startErrors.quota() : startErrors.downstream() };
  if (msg.type !== "conversation_initiation_metadata") return undefined;
  const meta = obj(msg.conversation_initiation_metadata_event);
  const input = parseRateFormat(meta.user_input_audio_format ?? "pcm_16000");
  const output = parseRateFormat(meta.agent_output_audio_format ?? "pcm_16000");
  return input && output ? { ready: { input, output } } : { fail: startErrors.unsupported() };
}

class Vendor3Connection extends BridgeConnection {
  /** The agent's audio chunks, decoded into one reused buffer (the media plane copies them). */
  readonly #audio = new AgentAudioDecoder();
  readonly inputSampleRate = SERVICE_INPUT_RATE;
  readonly outputSampleRate: number;
  readonly #encoder: UserAudioEncoder;
  readonly #turns: AgentTurns;
  readonly #feeder: SilenceFeeder;
  /** Audio of events before the latest interruption belongs to the cut response. */
  #interruptedAt = -1;
  /** Ticks since the open response's last audio. */
  #quietTicks = 0;
  #userTurn = 1;
  #lastAgentTurn: string | null = null;

  constructor(socket: WireSocket, ctx: ConnectionContext, readonly formats: Formats) {
    super(socket, ctx);
    this.outputSampleRate = formats.output.sampleRate;
    this.#encoder = new UserAudioEncoder(formats.input);
    this.#turns = new AgentTurns(ctx.events);
    this.#feeder = new SilenceFeeder(
      ctx.clock,
      this.stopped.signal,
      (ms) => this.#send(this.#encoder.silence(ms)),
    );
    const gapTicks = Math.ceil(AGENT_AUDIO_GAP_MS / SILENCE_CHUNK_MS);
    every(ctx.clock, SILENCE_CHUNK_MS, this.stopped.signal, () => {
      if (this.#turns.open !== null && ++this.#quietTicks >= gapTicks) this.#turns.done("completed");
    });
  }

  sendUserAudio(pcm: Uint8Array): void {
    const audio = this.#encoder.encode(pcm);
    if (audio) this.#send(audio);
    this.#feeder.fed(pcm.byteLength * 500 / SERVICE_INPUT_RATE);
  }

  #send(audio: string): void {
    if (this.canSendAudio(this.formats.input.sampleRate * 3)) this.sendJson({ user_audio_chunk: audio });
  }

  override reportPlayed(responseId: string): void {
    this.#turns.played(responseId);
  }

  protected onFrame(frame: Frame): void {
    const msg = jsonMessage(frame);
    if (!msg) return;
    const events = this.ctx.events;
    switch (msg.type) {
      case "audio": {
        const audio = obj(msg.audio_event);
        const eventId = typeof audio.event_id === "number" ? audio.event_id : Infinity;
        if (this.closing || typeof audio.audio_base_64 !== "string" || eventId < this.#interruptedAt) return;
        this.#quietTicks = 0;
        const id = this.#turns.current();
        // Character timings of this chunk, when the agent sends them, go to lip sync before the audio.
        const al = obj(audio.alignment);
        if (Array.isArray(al.chars) && Array.isArray(al.char_start_times_ms)) {
          events.onAgentAlignment?.(id, {
            chars: al.chars.map(String),
            charStartMs: al.char_start_times_ms.map(Number),
            charDurationMs: Array.isArray(al.char_durations_ms) ? al.char_durations_ms.map(Number) : [],
          });
        }
        events.onAudio(this.#audio.decode(audio.audio_base_64, this.formats.output), id);
        return;
      }
      case "interruption": {
        const id = obj(msg.interruption_event).event_id;
        if (typeof id === "number") this.#interruptedAt = Math.max(this.#interruptedAt, id);
        this.#turns.interrupt();
        return;
      }
      case "ping":
        this.sendJson({ type: "pong", event_id: obj(msg.ping_event).event_id });
        return;
      case "agent_response": {
        const e = obj(msg.agent_response_event);
        if (typeof e.agent_response !== "string") return;
        this.#lastAgentTurn = `agent_${e.event_id ?? "?"}`;
        events.onTranscript({
          role: "agent",
          turnId: this.#lastAgentTurn,
          text: e.agent_response,
          final: true,
        });
        return;
      }
      case "agent_response_correction": {
        const e = obj(msg.agent_response_correction_event);
        if (typeof e.corrected_agent_response !== "string" || this.#lastAgentTurn === null) return;
        events.onTranscript({
          role: "agent",
          turnId: this.#lastAgentTurn,
          text: e.corrected_agent_response,
          final: true,
        });
        return;
      }
      case "tentative_user_transcript": {
        const text = obj(msg.tentative_user_transcription_event).user_transcript;
        if (typeof text === "string") {
          events.onTranscript({ role: "user", turnId: `user_${this.#userTurn}`, text, final: false });
        }
        return;
      }
      case "user_transcript": {
        const text = obj(msg.user_transcription_event).user_transcript;
        if (typeof text === "string") {
          events.onTranscript({ role: "user", turnId: `user_${this.#userTurn++}`, text, final: true });
        }
        return;
      }
      case "client_tool_call": {
        const c = obj(msg.client_tool_call);
        const id = c.tool_call_id;
        const call = toolCall(
          { callId: id, name: c.tool_name, arguments: c.parameters ?? {} },
          (r) => {
            if (!this.closing) this.sendJson(clientToolResult(String(id), r));
          },
        );
        if (call) events.onToolCall(call);
        return;
      }
      case "error": {
        const e = obj(msg.error_event);
        if (quotaError(msg)) this.noteQuota();
        this.ctx.logger.info("engine error", {
          session_id: this.ctx.sessionId,
          code: typeof e.code === "number" ? e.code : 0,
          type: String(e.error_type ?? "").slice(0, 64),
        });
        return;
      }
    }
  }

  protected closure(c: Closed): ProviderClosure {
    if (c.code === 1000) {
      this.#turns.done("completed");
      return { kind: "ended_by_engine", reason: "agent_ended" };
    }
    return { kind: "failed", reason: `engine_closed_${c.code || 1006}` };
  }
}
