/**
 * A protocol-faithful fake of the vendor3 conversational-agent service (from the vendor's AsyncAPI
 * contract, JS client and docs; docs/providers.md lists the sources):
 *
 * - WebSocket `/v1/convai/conversation`: public agents by `?agent_id=`; private agents only with a valid
 *   `conversation_signature` (HTTP 403 at upgrade otherwise). The client's optional
 *   `conversation_initiation_client_data` is answered with `conversation_initiation_metadata` announcing the
 *   agent's audio formats; then `{user_audio_chunk}` (no `type`), JSON `ping` that must be answered with a
 *   `pong` carrying its `event_id` (else the fake closes 1002), `audio` / `interruption` with increasing
 *   `event_id`s, transcripts, `error` + close 1002/1008/1011, and a 1002 close after a while without user
 *   audio (`transport_receive_timeout`).
 * - REST `GET /v1/convai/conversation/get-signed-url?agent_id=…` with the `xi-api-key` header: a signed URL
 *   on this fake whose `conversation_signature` is `cvtkn_` + a ULID of the minting time (the form seen in
 *   the vendor's answers); 401 for a wrong key, 429 when told to, and `401 {"detail":{"status":
 *   "quota_exceeded",…}}` for spent credit (see {@link MINT_QUOTA_BODY}).
 * - Client tools: `client_tool_call` {client_tool_call: {tool_name, tool_call_id, parameters, event_id}}
 *   out, `client_tool_result` {tool_call_id, result, is_error} back (agent.asyncapi.yaml
 *   `ClientToolCallData`, `ClientToolResultPayload`).
 * - Spent quota: the *flat* error and the close of {@link QUOTA_FLAT_ERROR}, before or after the metadata.
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

/** How the fake answers. */
/** Character timings of one `audio` event (ms from the start of its chunk). */
export interface Alignment {
  chars: string[];
  char_start_times_ms: number[];
  char_durations_ms: number[];
}

export type Vendor3Behavior =
  | "ok"
  | "reject_429" // HTTP 429 at upgrade (concurrency limit)
  | "reject_503" // HTTP 503 at upgrade
  | "mint_429" // the REST mint answers 429 with Retry-After
  | "mint_503" // the REST mint answers 503
  | "error_quota" // accepts, then `error` (quota_exceeded) and close 1008
  | "quota_flat" // accepts, then the flat quota error and close 1002 (QUOTA_FLAT_ERROR), before the metadata
  | "mint_quota" // the REST mint answers 401 quota_exceeded (MINT_QUOTA_BODY)
  | "never_ready"; // accepts and never sends the metadata

/**
 * How spent credit really arrives on the conversation socket: a *flat* `error` (no `error_event`), captured
 * by a client of the vendor's Swift SDK (elevenlabs/elevenlabs-swift-sdk#160) and quoted again in
 * elevenlabs/packages#911, followed by a close whose reason is the quota text: code 1002 ("received 1002
 * (protocol error) This request exceeds your quota limit." is the server's own relay of that close; the
 * vendor's JS SDK reported such ends as a normal disconnect, close 1000, per packages#911).
 */
export const QUOTA_FLAT_ERROR = {
  type: "error",
  message:
    "received 1002 (protocol error) This request exceeds your quota limit.; then sent 1002 (protocol error) This request exceeds your quota limit.",
} as const;
/** The close reason of a quota kill (packages#911: `termination_reason`). */
export const QUOTA_CLOSE_REASON = "This request exceeds your quota limit.";

/**
 * The vendor's REST answer for spent credit, `401 {"detail":{"status":"quota_exceeded","message":…}}`, as a
 * real response captured it (home-assistant/core#160414, on the TTS endpoint; whether get-signed-url
 * answers alike is not documented).
 */
export const MINT_QUOTA_BODY = {
  detail: {
    status: "quota_exceeded",
    message:
      "This request exceeds your quota of 10000. You have 0 credits remaining, while 91 credits are required for this request.",
  },
} as const;

/** Options of the fake. */
export interface Vendor3Options {
  /** Agents reachable by id alone. */
  publicAgents: string[];
  /** Private agents: reachable with a signature this fake minted (or `signatures`). */
  privateAgents: string[];
  /** The API key the REST mint accepts. */
  apiKey: string;
  /** Signatures accepted besides minted ones. */
  signatures?: string[];
  behavior?: Vendor3Behavior;
  /** `agent_output_audio_format` and `user_input_audio_format` (default pcm_16000 both). */
  output?: string;
  input?: string;
  /** The fake pings every this many ms (default 2000) and wants each pong within 2 s. */
  pingMs?: number;
  /** Closes 1002 after this long without user audio (default 60 s). */
  idleMs?: number;
  retryAfterS?: number;
}

const CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz";

/** A ULID for `ms` (random part random). */
export function ulid(ms: number): string {
  let time = "";
  for (let i = 0, t = ms; i < 10; i++, t = Math.floor(t / 32)) time = CROCKFORD[t % 32] + time;
  let rand = "";
  for (let i = 0; i < 16; i++) rand += CROCKFORD[Math.floor(Math.random() * 32)];
  return time + rand;
}

/** One conversation, driven by the test. */
export class Vendor3Conversation {
  #event = 0;
  #ping = 0;
  readonly pongs: number[] = [];
  /** `client_tool_result`s the bridge sent, in order. */
  readonly toolResults: Record<string, unknown>[] = [];
  /** User audio received, decoded to PCM16 at the input rate. */
  readonly input: Int16Array[] = [];
  metadataSent = false;
  #timers: ReturnType<typeof setTimeout>[] = [];
  #idle: ReturnType<typeof setTimeout> | undefined;
  #pingTimer: ReturnType<typeof setInterval> | undefined;

  constructor(readonly ws: FakeSocket, readonly options: Vendor3Options) {
    ws.onMessage = (msg) => this.#onMessage(msg);
    ws.closed.then(() => {
      clearTimeout(this.#idle);
      clearInterval(this.#pingTimer);
      this.#timers.forEach(clearTimeout);
    });
  }

  get outputFormat(): string {
    return this.options.output ?? "pcm_16000";
  }
  get inputFormat(): string {
    return this.options.input ?? "pcm_16000";
  }
  get outputRate(): number {
    return Number(this.outputFormat.split("_")[1]);
  }
  get inputRate(): number {
    return Number(this.inputFormat.split("_")[1]);
  }

  /** Sends the metadata and starts pings and the inactivity timer. */
  start(): void {
    if (this.metadataSent) return;
    this.metadataSent = true;
    this.ws.send({
      type: "conversation_initiation_metadata",
      conversation_initiation_metadata_event: {
        conversation_id: "conv_fake3",
        agent_output_audio_format: this.outputFormat,
        user_input_audio_format: this.inputFormat,
      },
    });
    this.#armIdle();
    this.#pingTimer = setInterval(() => this.ping(), this.options.pingMs ?? 2000);
  }

  /** One `ping`; the conversation closes 1002 when it is not answered within 2 s. */
  ping(): number {
    const id = ++this.#ping;
    this.ws.send({ type: "ping", ping_event: { event_id: id, ping_ms: id > 1 ? 40 : null } });
    this.#timers.push(setTimeout(() => {
      if (!this.pongs.includes(id)) {
        this.ws.send({
          type: "error",
          error_event: { code: 1002, error_type: "websocket_disconnect", message: "ping timeout" },
        });
        this.ws.close(1002, "ping timeout");
      }
    }, 2000));
    return id;
  }

  #armIdle(): void {
    clearTimeout(this.#idle);
    this.#idle = setTimeout(() => {
      this.ws.send({
        type: "error",
        error_event: { code: 1002, error_type: "transport_receive_timeout", message: "No user input" },
      });
      this.ws.close(1002, "transport receive timeout");
    }, this.options.idleMs ?? 60_000);
  }

  #onMessage(msg: Record<string, unknown>): void {
    if (typeof msg.user_audio_chunk === "string") {
      const bytes = Uint8Array.fromBase64(msg.user_audio_chunk);
      this.input.push(this.inputFormat === "ulaw_8000" ? mulawToPcm(bytes) : base64Pcm(msg.user_audio_chunk));
      this.#armIdle();
      return;
    }
    switch (msg.type) {
      case "conversation_initiation_client_data":
        if (this.options.behavior !== "never_ready") this.start();
        return;
      case "pong":
        this.pongs.push(Number(msg.event_id));
        return;
      case "client_tool_result":
        this.toolResults.push(msg);
        return;
      case "user_activity":
      case "user_message":
      case "contextual_update":
        return;
      default:
        this.ws.send({
          type: "error",
          error_event: { code: 1008, error_type: "invalid_message", message: "invalid message" },
        });
        this.ws.close(1008, "invalid message");
    }
  }

  #encode(samples: Int16Array): string {
    return this.outputFormat === "ulaw_8000" ? pcmToMulaw(samples).toBase64() : pcmBase64(samples);
  }

  /**
   * An agent reply: `agent_response` (sent with the first audio), then `audio` events, each with its
   * character `alignment` when given. Returns its event id.
   */
  speak(chunks: Int16Array[], text = "Hello there", alignments?: Alignment[]): number {
    const id = ++this.#event;
    chunks.forEach((chunk, i) => {
      const alignment = alignments?.[i];
      this.ws.send({
        type: "audio",
        audio_event: {
          audio_base_64: this.#encode(chunk),
          event_id: id,
          ...(alignment ? { alignment } : {}),
        },
      });
      if (i === 0) {
        this.ws.send({
          type: "agent_response",
          agent_response_event: { agent_response: text, event_id: id },
        });
      }
    });
    return id;
  }

  /** Sends one `audio` event with a given event id (to replay stale audio). */
  audio(chunk: Int16Array, eventId: number): void {
    this.ws.send({ type: "audio", audio_event: { audio_base_64: this.#encode(chunk), event_id: eventId } });
  }

  /** The user cut the agent off: `interruption`, and the correction of what was said. */
  interrupt(original: string, spoken: string): number {
    const id = ++this.#event;
    this.ws.send({ type: "interruption", interruption_event: { event_id: id } });
    this.ws.send({
      type: "agent_response_correction",
      agent_response_correction_event: {
        original_agent_response: original,
        corrected_agent_response: spoken,
        event_id: id,
      },
    });
    return id;
  }

  /** The user's speech: a tentative transcript, then the final one. */
  userSays(text: string): void {
    const id = ++this.#event;
    this.ws.send({
      type: "tentative_user_transcript",
      tentative_user_transcription_event: { user_transcript: text.slice(0, 4), event_id: id },
    });
    this.ws.send({
      type: "user_transcript",
      user_transcription_event: { user_transcript: text, event_id: id },
    });
  }

  /** The agent calls a client tool. Returns its id. */
  callTool(name: string, parameters: Record<string, unknown>): string {
    const id = `tool_call_${++this.#event}`;
    this.ws.send({
      type: "client_tool_call",
      client_tool_call: { tool_name: name, tool_call_id: id, parameters, event_id: this.#event },
    });
    return id;
  }

  /**
   * Spent credit mid-call: the flat {@link QUOTA_FLAT_ERROR} (unless `errorEvent: false`: only the close),
   * then a close with {@link QUOTA_CLOSE_REASON} (1002, or 1000 as the JS SDK saw it).
   */
  quotaKill(options: { code?: number; errorEvent?: boolean } = {}): void {
    if (options.errorEvent !== false) this.ws.send(QUOTA_FLAT_ERROR);
    this.ws.close(options.code ?? 1002, QUOTA_CLOSE_REASON);
  }

  /** The agent ends the call: a normal close. */
  end(): void {
    this.ws.close(1000, "Agent ended the conversation");
  }

  /** The agent fails: `error` (1011) then close 1011. */
  fail(): void {
    this.ws.send({
      type: "error",
      error_event: { code: 1011, error_type: "unknown_websocket_crash", message: "Internal error" },
    });
    this.ws.close(1011, "internal error");
  }
}

/** A running vendor3 fake. */
export interface Vendor3Fake {
  server: FakeServer;
  /** For `SVC_VENDOR3_URL`. */
  url: string;
  /** For `SVC_VENDOR3_API_URL`. */
  apiUrl: string;
  conversations: Vendor3Conversation[];
  conversation(): Vendor3Conversation;
  /** A signed URL for a private agent, minted `ageMs` ago (what the customer's backend would pass). */
  signedUrl(agentId: string, ageMs?: number): string;
  /** REST requests seen (path and headers). */
  mints: { agentId: string; apiKey: string | null }[];
  close(): Promise<void>;
}

/** Starts the fake on loopback with TLS. */
export function startVendor3Fake(
  tls: { certPem: string; keyPem: string },
  options: Vendor3Options,
): Vendor3Fake {
  const conversations: Vendor3Conversation[] = [];
  const signatures = new Map<string, string>(); // signature → agent
  for (const s of options.signatures ?? []) signatures.set(s, "*");
  const mints: { agentId: string; apiKey: string | null }[] = [];
  let origin = "";
  const sign = (agentId: string, ageMs = 0) => {
    const signature = `cvtkn_${ulid(Date.now() - ageMs)}`;
    signatures.set(signature, agentId);
    return `${origin}/v1/convai/conversation?agent_id=${
      encodeURIComponent(agentId)
    }&conversation_signature=${signature}`;
  };
  const server = serveFake(tls, (req, _seen, accept) => {
    const url = new URL(req.url);
    const agentId = url.searchParams.get("agent_id") ?? "";
    if (url.pathname === "/v1/convai/conversation/get-signed-url") {
      mints.push({ agentId, apiKey: req.headers.get("xi-api-key") });
      if (options.behavior === "mint_429") {
        return Response.json({
          detail: { status: "too_many_concurrent_requests", message: "Too many requests" },
        }, {
          status: 429,
          headers: { "retry-after": String(options.retryAfterS ?? 29) },
        });
      }
      if (options.behavior === "mint_503") return Response.json({ detail: "unavailable" }, { status: 503 });
      if (options.behavior === "mint_quota") return Response.json(MINT_QUOTA_BODY, { status: 401 });
      if (req.headers.get("xi-api-key") !== options.apiKey) {
        return Response.json({ detail: { status: "invalid_api_key", message: "Invalid API key" } }, {
          status: 401,
        });
      }
      if (!options.privateAgents.includes(agentId) && !options.publicAgents.includes(agentId)) {
        return Response.json({ detail: { status: "agent_not_found", message: "Agent not found" } }, {
          status: 404,
        });
      }
      return Response.json({ signed_url: sign(agentId) });
    }
    if (url.pathname !== "/v1/convai/conversation") {
      return Response.json({ detail: "Not Found" }, { status: 404 });
    }
    if (options.behavior === "reject_429") {
      return Response.json({ detail: "too many concurrent conversations" }, {
        status: 429,
        headers: { "retry-after": String(options.retryAfterS ?? 29) },
      });
    }
    if (options.behavior === "reject_503") return Response.json({ detail: "unavailable" }, { status: 503 });
    const signature = url.searchParams.get("conversation_signature");
    const signedFor = signature ? signatures.get(signature) : undefined;
    const allowed = options.publicAgents.includes(agentId) ||
      (options.privateAgents.includes(agentId) && (signedFor === agentId || signedFor === "*"));
    if (!allowed) return Response.json({ detail: "Forbidden" }, { status: 403 });
    // Like the vendor: `convai` is selected when the client offers it (its browser SDK does), and clients
    // that offer none (server-side ones) are served too.
    const offered = (req.headers.get("sec-websocket-protocol") ?? "").split(",").map((p) => p.trim());
    const [ws, response] = accept(offered.includes("convai") ? "convai" : undefined);
    const conversation = new Vendor3Conversation(ws, options);
    conversations.push(conversation);
    if (options.behavior === "quota_flat") {
      ws.socket.addEventListener("open", () => conversation.quotaKill(), { once: true });
    }
    if (options.behavior === "error_quota") {
      ws.socket.addEventListener("open", () => {
        ws.send({
          type: "error",
          error_event: { code: 1008, error_type: "quota_exceeded", message: "You have exceeded your quota." },
        });
        ws.close(1008, "quota exceeded");
      }, { once: true });
    }
    return response;
  });
  origin = server.wsOrigin;
  return {
    server,
    url: `${server.wsOrigin}/v1/convai/conversation`,
    apiUrl: server.httpOrigin,
    conversations,
    conversation() {
      const c = conversations.at(-1);
      if (!c) throw new Error("no conversation yet");
      return c;
    },
    signedUrl: sign,
    mints,
    close: () => server.close(),
  };
}
