/**
 * A protocol-faithful fake of the vendor1 realtime WebSocket (GA interface), from the vendor's SDK sources
 * and API reference (docs/providers.md lists them): `Authorization: Bearer <client secret>` on the upgrade,
 * `session.created` first (the effective session with its audio formats and server VAD settings), then
 * events. It checks what the bridge sends as the real service would: `input_audio_buffer.append` with
 * base64 audio in the session's input format, `conversation.item.truncate` within the item's audio length
 * (else an `invalid_value` error), unknown client events answered with an `error` event.
 *
 * The test drives the agent: {@link Vendor1Call.speak}, {@link Vendor1Call.userSpeaks} (server VAD's
 * `speech_started` and the cancellation of the response in flight), transcripts, hang-up and failures,
 * function calls ({@link Vendor1Call.callFunction}) and a quota kill.
 *
 * The URL must name a model the fake knows, as the real service wants: a model-less URL is answered, after
 * the 101, with `error` `missing_model` and close 4000 `invalid_request_error.missing_model`, an unknown
 * model with `invalid_model` and close 4000 (captured against the vendor's API with a standard key,
 * 2026-09-18, probes 11b and 11; the capture's text is quoted in vendor-audit.md's source OAI-capture).
 *
 * @module
 */
import {
  base64Pcm,
  type FakeServer,
  FakeSocket,
  mulawToPcm,
  pcmBase64,
  pcmToMulaw,
  serveFake,
} from "./server.ts";

/** How the fake answers a connection. */
export type Vendor1Behavior =
  | "ok"
  | "reject_401" // HTTP 401 at upgrade (refused credentials)
  | "reject_429" // HTTP 429 at upgrade with Retry-After (rate limit)
  | "reject_503" // HTTP 503 at upgrade
  | "error_invalid_key" // accepts, then `error` invalid_api_key and close 1008
  | "error_quota" // accepts, then `error` insufficient_quota and close 4000 (see QUOTA_ERROR)
  | "missing_model" // accepts, then answers as to a URL without a model (probe 11b), whatever the URL
  | "never_ready"; // accepts and says nothing

/**
 * The vendor's error object for spent credit, `insufficient_quota` ("You exceeded your current quota, please
 * check your plan and billing details."), as its API reference's error-code guide gives it for 429 answers.
 * Over the realtime socket no capture exists (vendor-audit.md: quota UNVERIFIABLE); the fake sends it as an
 * `error` event and, as the capture shows for every fatal error, closes at once with code 4000 and the
 * error's `<type>.<code>` as the reason.
 */
export const QUOTA_ERROR = {
  type: "insufficient_quota",
  code: "insufficient_quota",
  message: "You exceeded your current quota, please check your plan and billing details.",
  param: null,
  event_id: null,
} as const;

/** Options of the fake. */
export interface Vendor1Options {
  /** The client secret it accepts. */
  secret: string;
  behavior?: Vendor1Behavior;
  /** Audio format of the session (`pcm`: 24 kHz PCM16; `pcmu`: G.711 µ-law 8 kHz). */
  format?: "pcm" | "pcmu";
  /** `interrupt_response` of the session's server VAD. */
  interruptResponse?: boolean;
  retryAfterS?: number;
  /** Models the fake knows (default `gpt-realtime`). */
  models?: string[];
}

/** One client connection, driven by the test. */
export class Vendor1Call {
  #event = 0;
  #response = 0;
  /** Audio the bridge appended, decoded to PCM16 at the session rate. */
  readonly input: Int16Array[] = [];
  /** Audio length per item (samples at the session rate), for truncate checks. */
  readonly itemSamples = new Map<string, number>();
  /** The response being generated, if any. */
  inFlight: string | null = null;
  /** `audio_end_ms` of every truncate the fake accepted. */
  readonly truncations: { itemId: string; audioEndMs: number }[] = [];
  /** Codes of the errors the fake answered client events with. */
  readonly clientErrors: string[] = [];
  /** `function_call_output` items the bridge created: call id → output text. */
  readonly functionOutputs = new Map<string, string>();
  /** Every `response.create` the bridge sent (the fake answers each with a short response). */
  responseCreates = 0;
  /** Every `response.cancel` the bridge sent. */
  responseCancels = 0;

  constructor(
    readonly ws: FakeSocket,
    readonly options: Required<Omit<Vendor1Options, "retryAfterS" | "models">>,
  ) {
    ws.onMessage = (msg) => this.#onClientEvent(msg);
  }

  get rate(): number {
    return this.options.format === "pcmu" ? 8000 : 24000;
  }

  send(event: Record<string, unknown>): void {
    this.ws.send({ event_id: `event_${++this.#event}`, ...event });
  }

  sessionCreated(): void {
    const format = this.options.format === "pcmu"
      ? { type: "audio/pcmu" }
      : { type: "audio/pcm", rate: 24000 };
    this.send({
      type: "session.created",
      session: {
        type: "realtime",
        object: "realtime.session",
        id: "sess_fake1",
        model: "gpt-realtime",
        output_modalities: ["audio"],
        audio: {
          input: {
            format,
            transcription: { model: "gpt-4o-mini-transcribe" },
            noise_reduction: null,
            turn_detection: {
              type: "server_vad",
              threshold: 0.5,
              prefix_padding_ms: 300,
              silence_duration_ms: 500,
              create_response: true,
              interrupt_response: this.options.interruptResponse,
            },
          },
          output: { format, voice: "marin", speed: 1 },
        },
      },
    });
  }

  #encode(samples: Int16Array): string {
    return this.options.format === "pcmu" ? pcmToMulaw(samples).toBase64() : pcmBase64(samples);
  }

  /**
   * The agent answers: `response.created`, the audio deltas (as fast as given, like the real service,
   * which runs ahead of playout), the transcript, `response.done`. Returns the response and item ids.
   */
  speak(
    chunks: Int16Array[],
    text = "Hello there",
    options: { done?: boolean } = {},
  ): { responseId: string; itemId: string } {
    const responseId = `resp_${++this.#response}`;
    const itemId = `item_${this.#response}`;
    this.inFlight = responseId;
    this.send({
      type: "response.created",
      response: { id: responseId, object: "realtime.response", status: "in_progress" },
    });
    this.send({
      type: "response.output_item.added",
      response_id: responseId,
      output_index: 0,
      item: { id: itemId, type: "message", role: "assistant" },
    });
    let samples = 0;
    for (const chunk of chunks) {
      samples += chunk.length;
      this.send({
        type: "response.output_audio.delta",
        response_id: responseId,
        item_id: itemId,
        output_index: 0,
        content_index: 0,
        delta: this.#encode(chunk),
      });
    }
    this.itemSamples.set(itemId, samples);
    const words = text.split(" ");
    words.forEach((w, i) =>
      this.send({
        type: "response.output_audio_transcript.delta",
        response_id: responseId,
        item_id: itemId,
        output_index: 0,
        content_index: 0,
        delta: (i ? " " : "") + w,
      })
    );
    if (options.done !== false) this.finish(responseId, itemId, text);
    return { responseId, itemId };
  }

  /** The end of a response: audio done, transcript done, `response.done` (completed). */
  finish(responseId: string, itemId: string, text: string, status = "completed"): void {
    this.send({
      type: "response.output_audio.done",
      response_id: responseId,
      item_id: itemId,
      output_index: 0,
      content_index: 0,
    });
    this.send({
      type: "response.output_audio_transcript.done",
      response_id: responseId,
      item_id: itemId,
      output_index: 0,
      content_index: 0,
      transcript: text,
    });
    this.send({ type: "response.done", response: { id: responseId, object: "realtime.response", status } });
    if (this.inFlight === responseId) this.inFlight = null;
  }

  /** Server VAD hears the user: `speech_started`; with `interrupt_response`, the response in flight is cancelled. */
  userSpeaks(itemId = `item_user_${this.#event}`): void {
    this.send({ type: "input_audio_buffer.speech_started", audio_start_ms: 1000, item_id: itemId });
    if (this.options.interruptResponse && this.inFlight) {
      this.send({
        type: "response.done",
        response: { id: this.inFlight, object: "realtime.response", status: "cancelled" },
      });
      this.inFlight = null;
    }
  }

  /** The user's input transcription: a delta, then the completed transcript. */
  userTranscript(itemId: string, text: string): void {
    this.send({
      type: "conversation.item.input_audio_transcription.delta",
      item_id: itemId,
      content_index: 0,
      delta: text.slice(0, 3),
    });
    this.send({
      type: "conversation.item.input_audio_transcription.completed",
      item_id: itemId,
      content_index: 0,
      transcript: text,
    });
  }

  /**
   * A function call, as the vendor streams one inside a response (openai-node `realtime.ts`
   * `ResponseFunctionCallArgumentsDoneEvent` {call_id, item_id, name, arguments (JSON text), output_index,
   * response_id}; the item's `response.output_item.done` {item: {type: "function_call", status:
   * "completed", call_id, name, arguments}} that openai-agents-js `openaiRealtimeBase.ts` reads), then the
   * response's `response.done` unless `done: false`. Returns the call id.
   */
  callFunction(name: string, args: Record<string, unknown>, options: { done?: boolean } = {}): string {
    const responseId = `resp_${++this.#response}`;
    const itemId = `item_fc_${this.#response}`;
    const callId = `call_${this.#response}`;
    const argumentsText = JSON.stringify(args);
    this.inFlight = responseId;
    this.send({
      type: "response.created",
      response: { id: responseId, object: "realtime.response", status: "in_progress" },
    });
    this.send({
      type: "response.output_item.added",
      response_id: responseId,
      output_index: 0,
      item: {
        id: itemId,
        type: "function_call",
        status: "in_progress",
        name,
        call_id: callId,
        arguments: "",
      },
    });
    this.send({
      type: "response.function_call_arguments.delta",
      response_id: responseId,
      item_id: itemId,
      output_index: 0,
      call_id: callId,
      delta: argumentsText,
    });
    this.send({
      type: "response.function_call_arguments.done",
      response_id: responseId,
      item_id: itemId,
      output_index: 0,
      call_id: callId,
      name,
      arguments: argumentsText,
    });
    this.send({
      type: "response.output_item.done",
      response_id: responseId,
      output_index: 0,
      item: {
        id: itemId,
        type: "function_call",
        object: "realtime.item",
        status: "completed",
        name,
        call_id: callId,
        arguments: argumentsText,
      },
    });
    if (options.done !== false) this.responseDone(responseId);
    return callId;
  }

  /** `response.done` (completed) of a response without audio. */
  responseDone(responseId: string): void {
    this.send({
      type: "response.done",
      response: { id: responseId, object: "realtime.response", status: "completed" },
    });
    if (this.inFlight === responseId) this.inFlight = null;
  }

  /** A quota kill mid-session: the {@link QUOTA_ERROR} event, then close 4000 with its `<type>.<code>`. */
  quotaKill(): void {
    this.send({ type: "error", error: QUOTA_ERROR });
    this.ws.close(4000, `${QUOTA_ERROR.type}.${QUOTA_ERROR.code}`);
  }

  /** The session's time limit: `error` session_expired, then close 1001 (what the vendor does at 60 minutes). */
  expire(): void {
    this.send({
      type: "error",
      error: {
        type: "invalid_request_error",
        code: "session_expired",
        message: "Your session hit the maximum duration of 60 minutes.",
        param: null,
        event_id: null,
      },
    });
    this.ws.close(1001, "Your session hit the maximum duration of 60 minutes.");
  }

  /** A server failure mid-session: `error` server_error, then close 1011. */
  fail(): void {
    this.send({
      type: "error",
      error: {
        type: "server_error",
        code: "server_error",
        message: "The server had an error.",
        param: null,
        event_id: null,
      },
    });
    this.ws.close(1011, "internal error");
  }

  #onClientEvent(msg: Record<string, unknown>): void {
    switch (msg.type) {
      case "input_audio_buffer.append": {
        const audio = String(msg.audio ?? "");
        this.input.push(
          this.options.format === "pcmu" ? mulawToPcm(Uint8Array.fromBase64(audio)) : base64Pcm(audio),
        );
        return;
      }
      case "conversation.item.truncate": {
        const samples = this.itemSamples.get(String(msg.item_id));
        const endMs = Number(msg.audio_end_ms);
        if (
          samples === undefined || !Number.isInteger(endMs) || endMs < 0 || endMs > samples * 1000 / this.rate
        ) {
          this.clientErrors.push("invalid_value");
          this.send({
            type: "error",
            error: {
              type: "invalid_request_error",
              code: "invalid_value",
              message: "Audio content end ms is invalid.",
              param: "audio_end_ms",
              event_id: msg.event_id ?? null,
            },
          });
          return;
        }
        this.truncations.push({ itemId: String(msg.item_id), audioEndMs: endMs });
        this.send({
          type: "conversation.item.truncated",
          item_id: msg.item_id,
          content_index: msg.content_index,
          audio_end_ms: endMs,
        });
        return;
      }
      case "conversation.item.create": {
        // openai-node `ConversationItemCreateEvent` with a `RealtimeConversationItemFunctionCallOutput` item.
        const item = (msg.item ?? {}) as Record<string, unknown>;
        if (item.type === "function_call_output" && typeof item.call_id === "string") {
          this.functionOutputs.set(item.call_id, String(item.output));
        }
        return;
      }
      case "response.create": {
        this.responseCreates++;
        if (this.inFlight) {
          // The vendor refuses a second response while one runs (the reason openai-agents-js sequences its
          // `response.create`s in `responseCreateSequencer.ts`).
          this.clientErrors.push("conversation_already_has_active_response");
          this.send({
            type: "error",
            error: {
              type: "invalid_request_error",
              code: "conversation_already_has_active_response",
              message: "Conversation already has an active response in progress.",
              param: null,
              event_id: msg.event_id ?? null,
            },
          });
          return;
        }
        const id = `resp_${++this.#response}`;
        this.send({
          type: "response.created",
          response: { id, object: "realtime.response", status: "in_progress" },
        });
        this.responseDone(id);
        return;
      }
      case "response.cancel":
        this.responseCancels++;
        if (this.inFlight) {
          this.send({
            type: "response.done",
            response: { id: this.inFlight, object: "realtime.response", status: "cancelled" },
          });
          this.inFlight = null;
        }
        return;
      case "session.update":
      case "input_audio_buffer.commit":
      case "input_audio_buffer.clear":
        return;
      default:
        this.clientErrors.push("unknown_event");
        this.send({
          type: "error",
          error: {
            type: "invalid_request_error",
            code: "unknown_event",
            message: "Unknown event type.",
            param: null,
            event_id: msg.event_id ?? null,
          },
        });
    }
  }
}

/** A running vendor1 fake. */
export interface Vendor1Fake {
  server: FakeServer;
  /** The URL to configure as `SVC_VENDOR1_REALTIME_URL`. */
  url: string;
  calls: Vendor1Call[];
  /** The latest call. */
  call(): Vendor1Call;
  close(): Promise<void>;
}

/** Starts the fake on loopback with TLS. */
export function startVendor1Fake(
  tls: { certPem: string; keyPem: string },
  options: Vendor1Options,
): Vendor1Fake {
  const o = { behavior: "ok" as const, format: "pcm" as const, interruptResponse: true, ...options };
  const models = options.models ?? ["gpt-realtime"];
  const calls: Vendor1Call[] = [];
  const server = serveFake(tls, (req, _seen, accept) => {
    const url = new URL(req.url);
    if (url.pathname !== "/v1/realtime") {
      return Response.json({ error: { message: "Not found" } }, { status: 404 });
    }
    const behavior = o.behavior;
    if (behavior === "reject_503") {
      return Response.json({ error: { message: "Service unavailable" } }, { status: 503 });
    }
    if (behavior === "reject_429") {
      return Response.json({
        error: { type: "requests", code: "rate_limit_exceeded", message: "Rate limit reached" },
      }, {
        status: 429,
        headers: { "retry-after": String(o.retryAfterS ?? 17) },
      });
    }
    const authorized = req.headers.get("authorization") === `Bearer ${o.secret}`;
    if (behavior === "reject_401" || (!authorized && behavior !== "error_invalid_key")) {
      return Response.json({
        error: {
          type: "invalid_request_error",
          code: "invalid_api_key",
          message: "Incorrect API key provided.",
        },
      }, { status: 401 });
    }
    const [ws, response] = accept();
    const call = new Vendor1Call(ws, o as Required<Omit<Vendor1Options, "retryAfterS" | "models">>);
    calls.push(call);
    const model = url.searchParams.get("model");
    ws.socket.addEventListener("open", () => {
      if (model === null || !models.includes(model) || behavior === "missing_model") {
        // The capture's probes 11b (no model) and 11 (an unknown one), verbatim but for the event id.
        const code = model === null || behavior === "missing_model" ? "missing_model" : "invalid_model";
        call.send({
          type: "error",
          error: {
            type: "invalid_request_error",
            code,
            message: code === "missing_model"
              ? "You must provide a model parameter, for example wss://api.openai.com/v1/realtime?model=gpt-realtime-1.5"
              : `Model "${model}" is not supported in realtime mode.`,
            param: null,
            event_id: null,
          },
        });
        ws.close(4000, `invalid_request_error.${code}`);
      } else if (behavior === "error_invalid_key") {
        call.send({
          type: "error",
          error: {
            type: "invalid_request_error",
            code: "invalid_api_key",
            message: "Incorrect API key provided.",
            param: null,
            event_id: null,
          },
        });
        ws.close(1008, "invalid api key");
      } else if (behavior === "error_quota") {
        call.send({ type: "error", error: QUOTA_ERROR });
        ws.close(4000, `${QUOTA_ERROR.type}.${QUOTA_ERROR.code}`);
      } else if (behavior === "ok") {
        call.sessionCreated();
      }
    }, { once: true });
    return response;
  });
  return {
    server,
    url: `${server.wsOrigin}/v1/realtime`,
    calls,
    call() {
      const c = calls.at(-1);
      if (!c) throw new Error("no call yet");
      return c;
    },
    close: () => server.close(),
  };
}
