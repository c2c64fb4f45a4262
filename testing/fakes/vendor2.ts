/**
 * A protocol-faithful fake of the vendor2 managed-agents WebSocket, API version 2026-08-14 (from the
 * vendor's AsyncAPI document; docs/providers.md lists the sources): `/v1/agents/websocket/{agent_id}` with
 * the access token in the `access_token` query parameter and `cartesia_version`; `session_create` must be
 * the first message, within 10 s, with only known fields, else `error` (fatal) and close 1008; then
 * `session_ready` echoing the input format; agent audio in the same format; `error` with `fatal` and closes
 * 1008/1011. Like the real service, it closes a socket that receives no audio for a while (its idle limit is
 * configurable here). Client tools: `client_tool_call` {tool_call_id, tool_name, parameters,
 * expects_response} out, `client_tool_result` {tool_call_id, result (≤ 4096 bytes), is_error} back (AsyncAPI
 * and docs.cartesia.ai/agents/client-tools). Quota: the vendor's generic WebSocket error object (below).
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
export type Vendor2Behavior =
  | "ok"
  | "reject_429" // HTTP 429 at upgrade with Retry-After (concurrency limit)
  | "reject_503" // HTTP 503 at upgrade
  | "agent_failed" // session_create → error agent_failed (fatal) → close 1011
  | "quota_error" // session_create → the generic quota error object (QUOTA_ERROR) → close 1008
  | "never_ready"; // accepts session_create and never answers

/**
 * The vendor's generic WebSocket error event for a plan limit, verbatim from docs.cartesia.ai
 * `use-the-api/api-errors` ("WebSocket Error Event Object": `type`, `done`, `status_code`, `error_code`,
 * `title`, `message`, `request_id`). The close after it is not documented; the fake closes 1008, the
 * managed-agents contract's code for a fatal client-side error.
 */
export const QUOTA_ERROR = {
  type: "error",
  done: true,
  status_code: 429,
  error_code: "concurrency_limited",
  title: "Too many concurrent requests",
  message: "You have exceeded your plan's concurrency limit.",
  request_id: "550e8400-e29b-41d4-a716-446655440000",
} as const;

/** Options of the fake. */
export interface Vendor2Options {
  /** The access token it accepts (anything else: HTTP 401 at upgrade). */
  token: string;
  /** The agent ids it knows (others: HTTP 404). */
  agents: string[];
  behavior?: Vendor2Behavior;
  /** The input format it echoes in `session_ready` (default: what the client asked for). */
  format?: string;
  /** Closes the socket after this long without `audio_input` (default 120 s). */
  idleMs?: number;
  retryAfterS?: number;
}

const FORMATS = ["mulaw_8000", "pcm_16000", "pcm_24000", "pcm_44100"];

/** One call, driven by the test. */
export class Vendor2Call {
  #turn = 0;
  /** Audio the bridge sent, decoded to PCM16 at the session's rate. */
  readonly input: Int16Array[] = [];
  /** The session's input (and output) format. */
  format = "";
  /** `client_tool_result`s the bridge sent, in order. */
  readonly toolResults: Record<string, unknown>[] = [];
  #idle: ReturnType<typeof setTimeout> | undefined;

  constructor(readonly ws: FakeSocket, readonly options: Vendor2Options) {
    ws.onMessage = (msg) => this.#onMessage(msg);
    ws.closed.then(() => clearTimeout(this.#idle));
    // session_create must arrive within 10 s
    this.#idle = setTimeout(() => this.ws.close(1008, "session_create timeout"), 10_000);
  }

  get rate(): number {
    return Number(this.format.split("_")[1]);
  }

  #armIdle(): void {
    clearTimeout(this.#idle);
    this.#idle = setTimeout(
      () => this.ws.close(1000, "connection idle timeout"),
      this.options.idleMs ?? 120_000,
    );
  }

  #onMessage(msg: Record<string, unknown>): void {
    if (!this.format) {
      clearTimeout(this.#idle);
      const audio = msg.audio as Record<string, unknown> | undefined;
      const keys = Object.keys(msg).filter((k) => k !== "type" && k !== "audio" && k !== "dynamic_variables");
      const audioKeys = Object.keys(audio ?? {}).filter((k) =>
        k !== "input_format" && k !== "output_delivery"
      );
      if (
        msg.type !== "session_create" || keys.length || audioKeys.length ||
        !FORMATS.includes(String(audio?.input_format))
      ) {
        this.ws.send({
          type: "error",
          code: "invalid_event",
          message: "session_create must come first",
          fatal: true,
        });
        this.ws.close(1008, "invalid session_create");
        return;
      }
      if (this.options.behavior === "agent_failed") {
        this.ws.send({
          type: "error",
          code: "agent_failed",
          message: "The agent failed to start.",
          fatal: true,
        });
        this.ws.close(1011, "agent failed");
        return;
      }
      if (this.options.behavior === "quota_error") {
        this.ws.send(QUOTA_ERROR);
        this.ws.close(1008, "concurrency limit");
        return;
      }
      if (this.options.behavior === "never_ready") return;
      this.format = this.options.format ?? String(audio!.input_format);
      this.ws.send({
        type: "session_ready",
        call_id: "ac_fake2",
        agent_id: this.ws.request.url.pathname.split("/").at(-1),
        agent_version_id: "av_fake2",
        audio: { input_format: this.format, output_delivery: audio?.output_delivery ?? "speaking_pace" },
      });
      this.#armIdle();
      return;
    }
    if (msg.type === "audio_input") {
      const bytes = Uint8Array.fromBase64(String(msg.audio));
      this.input.push(this.format === "mulaw_8000" ? mulawToPcm(bytes) : base64Pcm(String(msg.audio)));
      this.#armIdle();
      return;
    }
    if (msg.type === "client_tool_result") {
      this.toolResults.push(msg);
      return;
    }
    if (msg.type === "dtmf_input") return;
    this.ws.send({ type: "error", code: "invalid_event", message: "unknown event", fatal: false });
  }

  #encode(samples: Int16Array): string {
    return this.format === "mulaw_8000" ? pcmToMulaw(samples).toBase64() : pcmBase64(samples);
  }

  /** An assistant turn: `turn_started`, audio, text deltas, and (unless `end: false`) `turn_ended`. */
  speak(chunks: Int16Array[], text = "Hello there", options: { end?: boolean } = {}): number {
    const turn = ++this.#turn;
    this.ws.send({ type: "turn_started", turn, role: "assistant", start_time: 1 });
    for (const chunk of chunks) this.ws.send({ type: "audio_output", audio: this.#encode(chunk) });
    text.split(" ").forEach((w, i) =>
      this.ws.send({ type: "turn_output_text_delta", turn, role: "assistant", text: (i ? " " : "") + w })
    );
    if (options.end !== false) this.endTurn(turn, text, false);
    return turn;
  }

  endTurn(turn: number, text: string, interrupted: boolean): void {
    this.ws.send({
      type: "turn_ended",
      turn,
      role: "assistant",
      text,
      interrupted,
      start_time: 1,
      end_time: 2,
      tool_calls: [],
    });
  }

  /** The user starts speaking over the agent: `turn_started` (user), `audio_output_clear`. */
  bargeIn(): void {
    this.ws.send({ type: "turn_started", turn: ++this.#turn, role: "user", start_time: 3 });
    this.ws.send({ type: "audio_output_clear" });
  }

  /** A user turn: `turn_started`, then `turn_ended` with the final text. */
  userTurn(text: string): number {
    const turn = ++this.#turn;
    this.ws.send({ type: "turn_started", turn, role: "user", start_time: 4 });
    this.ws.send({
      type: "turn_ended",
      turn,
      role: "user",
      text,
      interrupted: false,
      start_time: 4,
      end_time: 5,
      tool_calls: [],
    });
    return turn;
  }

  /** The agent calls a client tool (AsyncAPI `client_tool_call`). Returns its id. */
  callTool(name: string, parameters: Record<string, unknown>, expectsResponse = true): string {
    const id = `call_${crypto.randomUUID().slice(0, 12)}`;
    this.ws.send({
      type: "client_tool_call",
      tool_call_id: id,
      tool_name: name,
      parameters,
      expects_response: expectsResponse,
    });
    return id;
  }

  /** The plan's limit hit mid-call: {@link QUOTA_ERROR}, then close 1008 (or only a close whose reason says so). */
  quotaKill(options: { errorEvent?: boolean } = {}): void {
    if (options.errorEvent !== false) this.ws.send(QUOTA_ERROR);
    this.ws.close(1008, "You have exceeded your plan's concurrency limit.");
  }

  /** The agent hangs up: a normal close. */
  hangup(): void {
    this.ws.close(1000, "call ended by agent");
  }

  /** The agent fails mid-call: `error` agent_failed (fatal), close 1011. */
  fail(): void {
    this.ws.send({ type: "error", code: "agent_failed", message: "The agent failed.", fatal: true });
    this.ws.close(1011, "agent failed");
  }
}

/** A running vendor2 fake. */
export interface Vendor2Fake {
  server: FakeServer;
  /** The URL to configure as `SVC_VENDOR2_URL`. */
  url: string;
  calls: Vendor2Call[];
  call(): Vendor2Call;
  close(): Promise<void>;
}

/** Starts the fake on loopback with TLS. */
export function startVendor2Fake(
  tls: { certPem: string; keyPem: string },
  options: Vendor2Options,
): Vendor2Fake {
  const calls: Vendor2Call[] = [];
  const server = serveFake(tls, (req, _seen, accept) => {
    const url = new URL(req.url);
    const m = /^\/v1\/agents\/websocket\/([^/]+)$/.exec(url.pathname);
    if (!m) return Response.json({ error: "not found" }, { status: 404 });
    if (url.searchParams.get("cartesia_version") !== "2026-08-14") {
      return Response.json({ error: "unsupported version" }, { status: 400 });
    }
    if (options.behavior === "reject_503") return Response.json({ error: "unavailable" }, { status: 503 });
    if (options.behavior === "reject_429") {
      return Response.json({ error: "Too many concurrent connections" }, {
        status: 429,
        headers: { "retry-after": String(options.retryAfterS ?? 23) },
      });
    }
    if (url.searchParams.get("access_token") !== options.token) {
      return Response.json({ error: "Invalid or expired token" }, { status: 401 });
    }
    if (!options.agents.includes(decodeURIComponent(m[1]))) {
      return Response.json({ error: "agent not found" }, { status: 404 });
    }
    const [ws, response] = accept();
    calls.push(new Vendor2Call(ws, options));
    return response;
  });
  return {
    server,
    url: `${server.wsOrigin}/v1/agents/websocket`,
    calls,
    call() {
      const c = calls.at(-1);
      if (!c) throw new Error("no call yet");
      return c;
    },
    close: () => server.close(),
  };
}
