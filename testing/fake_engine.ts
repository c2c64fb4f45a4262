/**
 * Misbehaving V0 engines for failure-mode tests (the reference engine covers the well-behaved path).
 *
 * @module
 */

/** How the fake engine behaves. */
export type FakeEngineBehavior =
  | "ok" // handshake, then idle; closes 1000 on session.end
  | "reject_401" // HTTP 401 at upgrade
  | "reject_503" // HTTP 503 at upgrade
  | "reject_404" // HTTP 404 at upgrade
  | "close_4001" // accepts, then closes 4001
  | "close_4003" // accepts, then closes 4003 with a bad_audio_format error
  | "close_1013" // accepts, then closes 1013 (try again later)
  | "rate_limited" // accepts, then error rate_limited + close 4029
  | "never_ready" // accepts and never answers session.start
  | "ignore_end" // handshake, then never closes on session.end
  | "ready_then_fail" // handshake, then 50 ms later a fatal error and close 1011 (an engine failure)
  | "ready_then_rate_limited"; // handshake, then 50 ms later error rate_limited (fatal) and close 4029

/** A running fake engine. */
export interface FakeEngine {
  url: string;
  /** Headers of every upgrade request. */
  upgrades: Headers[];
  /** Every JSON message received (all connections). */
  messages: Record<string, unknown>[];
  /** Bytes of binary audio received. */
  audioBytes: number;
  /** Closes every open socket with `code` (engine-initiated end). */
  closeAll(code: number, sendEnd?: boolean): void;
  /** Sends a JSON message on every open socket. */
  sendAll(message: Record<string, unknown>): void;
  /** Sends agent audio (PCM16LE at 24 kHz, the rate its `session.ready` declares) on every open socket. */
  sendAudio(pcm: Int16Array): void;
  close(): Promise<void>;
}

/** Starts a fake engine on 127.0.0.1 with TLS. */
export function startFakeEngine(
  tls: { certPem: string; keyPem: string },
  behavior: FakeEngineBehavior,
): Promise<FakeEngine> {
  const sockets = new Set<WebSocket>();
  const closed: Promise<void>[] = [];
  const engine: FakeEngine = {
    url: "",
    upgrades: [],
    messages: [],
    audioBytes: 0,
    closeAll(code, sendEnd = false) {
      for (const s of sockets) {
        if (sendEnd) s.send(JSON.stringify({ type: "session.end", reason: "agent_hangup" }));
        s.close(code);
      }
    },
    sendAll(message) {
      for (const s of sockets) if (s.readyState === WebSocket.OPEN) s.send(JSON.stringify(message));
    },
    sendAudio(pcm) {
      for (const s of sockets) if (s.readyState === WebSocket.OPEN) s.send(pcm.slice().buffer);
    },
    async close() {
      for (const s of sockets) if (s.readyState === WebSocket.OPEN) s.close(1001);
      await Promise.all(closed);
      await server.shutdown();
    },
  };
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    cert: tls.certPem,
    key: tls.keyPem,
    onListen: () => {},
  }, (req) => {
    engine.upgrades.push(new Headers(req.headers));
    if (behavior === "reject_401") return new Response("unauthorized", { status: 401 });
    if (behavior === "reject_503") return new Response("busy", { status: 503 });
    if (behavior === "reject_404") return new Response("nope", { status: 404 });
    const { socket, response } = Deno.upgradeWebSocket(req, { protocol: "avatar-engine.v0" });
    sockets.add(socket);
    closed.push(new Promise((r) => socket.addEventListener("close", () => r(), { once: true })));
    socket.onclose = () => sockets.delete(socket);
    socket.onmessage = (e) => {
      if (typeof e.data !== "string") {
        engine.audioBytes += (e.data as ArrayBuffer).byteLength ?? (e.data as Blob).size;
        return;
      }
      const msg = JSON.parse(e.data);
      engine.messages.push(msg);
      if (msg.type === "session.start") {
        switch (behavior) {
          case "close_4001":
            return socket.close(4001, "unauthorized");
          case "close_1013":
            return socket.close(1013, "overloaded");
          case "close_4003":
            socket.send(
              JSON.stringify({ type: "error", code: "bad_audio_format", message: "no", fatal: true }),
            );
            return socket.close(4003, "bad audio format");
          case "rate_limited":
            socket.send(
              JSON.stringify({ type: "error", code: "rate_limited", message: "quota", fatal: true }),
            );
            return socket.close(4029, "rate limited");
          case "never_ready":
            return;
          default:
            socket.send(JSON.stringify({
              type: "session.ready",
              session_id: msg.session_id,
              engine_session_id: "fake_1",
              audio: { output: { encoding: "pcm_s16le", sample_rate: 24000, channels: 1 } },
            }));
            if (behavior === "ready_then_fail") {
              setTimeout(() => {
                if (socket.readyState !== WebSocket.OPEN) return;
                socket.send(
                  JSON.stringify({ type: "error", code: "engine_failure", message: "cut", fatal: true }),
                );
                socket.close(1011, "engine failure");
              }, 50);
            }
            if (behavior === "ready_then_rate_limited") {
              setTimeout(() => {
                if (socket.readyState !== WebSocket.OPEN) return;
                socket.send(
                  JSON.stringify({ type: "error", code: "rate_limited", message: "quota", fatal: true }),
                );
                socket.close(4029, "rate limited");
              }, 50);
            }
        }
      }
      if (msg.type === "session.end" && behavior !== "ignore_end") socket.close(1000);
    };
    return response;
  });
  engine.url = `wss://localhost:${server.addr.port}/v0`;
  return Promise.resolve(engine);
}
