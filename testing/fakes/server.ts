/**
 * What the vendor fakes share: a TLS server on loopback (trusting the tests' CA), a record of every upgrade
 * request (URL and headers, so tests can see where a credential was presented), and sockets that record
 * the JSON they receive and close cleanly when the fake stops.
 *
 * @module
 */

/** One upgrade request as the fake saw it. */
export interface SeenRequest {
  url: URL;
  headers: Headers;
}

/** One accepted WebSocket connection. */
export class FakeSocket {
  /** Every JSON message received, in order. */
  readonly received: Record<string, unknown>[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  /** Called for every JSON message (after it is recorded). */
  onMessage: (msg: Record<string, unknown>) => void = () => {};

  constructor(readonly socket: WebSocket, readonly request: SeenRequest) {
    this.closed = new Promise((resolve) =>
      socket.addEventListener("close", (e) => resolve({ code: e.code, reason: e.reason }), { once: true })
    );
    socket.addEventListener("message", (e) => {
      if (typeof e.data !== "string") return;
      const msg = JSON.parse(e.data);
      this.received.push(msg);
      this.onMessage(msg);
    });
  }

  get open(): boolean {
    return this.socket.readyState === WebSocket.OPEN;
  }

  /** Sends one JSON message (when open). */
  send(msg: unknown): void {
    if (this.open) this.socket.send(JSON.stringify(msg));
  }

  close(code = 1000, reason = ""): void {
    if (this.open || this.socket.readyState === WebSocket.CONNECTING) this.socket.close(code, reason);
  }

  /** Messages received of one `type`. */
  ofType(type: string): Record<string, unknown>[] {
    return this.received.filter((m) => m.type === type);
  }
}

/** A running fake: its base URLs, what it saw, and how to stop it. */
export interface FakeServer {
  /** `wss://localhost:<port>` */
  wsOrigin: string;
  /** `https://localhost:<port>` */
  httpOrigin: string;
  /** Every request (upgrades and REST calls), in order. */
  requests: SeenRequest[];
  /** Every accepted connection, in order. */
  sockets: FakeSocket[];
  /** The latest connection (throws when there is none). */
  last(): FakeSocket;
  close(): Promise<void>;
}

/**
 * Serves `handle` over TLS on 127.0.0.1. The handler gets the request and an `accept` function that upgrades
 * it (with an optional subprotocol) and returns the response to give back.
 */
export function serveFake(
  tls: { certPem: string; keyPem: string },
  handle: (
    req: Request,
    seen: SeenRequest,
    accept: (protocol?: string) => [FakeSocket, Response],
  ) => Response | Promise<Response>,
): FakeServer {
  const requests: SeenRequest[] = [];
  const sockets: FakeSocket[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, cert: tls.certPem, key: tls.keyPem, onListen: () => {} },
    (req) => {
      const seen = { url: new URL(req.url), headers: new Headers(req.headers) };
      requests.push(seen);
      return handle(req, seen, (protocol) => {
        const { socket, response } = Deno.upgradeWebSocket(req, protocol ? { protocol } : {});
        const fake = new FakeSocket(socket, seen);
        sockets.push(fake);
        return [fake, response];
      });
    },
  );
  const port = server.addr.port;
  return {
    wsOrigin: `wss://localhost:${port}`,
    httpOrigin: `https://localhost:${port}`,
    requests,
    sockets,
    last() {
      const s = sockets.at(-1);
      if (!s) throw new Error("no connection yet");
      return s;
    },
    async close() {
      for (const s of sockets) s.close(1001, "fake shutting down");
      await Promise.all(sockets.map((s) => s.closed));
      await server.shutdown();
    },
  };
}

/** Waits until `predicate` holds (polling every 10 ms) or throws after `timeoutMs`. */
export async function until(predicate: () => boolean, timeoutMs = 20_000, what = "condition"): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** PCM16 samples as little-endian bytes, base64. */
export function pcmBase64(samples: Int16Array): string {
  return new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength).toBase64();
}

/** Base64 PCM16LE to samples. */
export function base64Pcm(b64: string): Int16Array {
  const bytes = Uint8Array.fromBase64(b64);
  return new Int16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >> 1);
}

/** G.711 µ-law decoding by the standard's formula (independent of the service's table). */
export function mulawToPcm(bytes: Uint8Array): Int16Array {
  return Int16Array.from(bytes, (b) => {
    const u = ~b & 0xff;
    const magnitude = ((((u & 0x0f) << 3) + 0x84) << ((u >> 4) & 0x07)) - 0x84;
    return u & 0x80 ? -magnitude : magnitude;
  });
}

/** G.711 µ-law encoding by the standard's formula (for fakes speaking µ-law). */
export function pcmToMulaw(samples: Int16Array): Uint8Array {
  return Uint8Array.from(samples, (s) => {
    const sign = s < 0 ? 0x80 : 0;
    let m = Math.min(Math.abs(s), 32635) + 0x84;
    let e = 7;
    while (e > 0 && (m & (0x4000 >> (7 - e))) === 0) e--;
    const mantissa = (m >> (e + 3)) & 0x0f;
    m = ~(sign | (e << 4) | mantissa) & 0xff;
    return m;
  });
}

/** A sine tone, PCM16 mono. */
export function tone(samples: number, rate: number, hz = 300, amplitude = 10_000, offset = 0): Int16Array {
  return Int16Array.from(
    { length: samples },
    (_, i) => Math.round(amplitude * Math.sin(2 * Math.PI * hz * (offset + i) / rate)),
  );
}

/** Frequency of a tone estimated from its zero crossings. */
export function toneHz(samples: Int16Array, rate: number): number {
  let crossings = 0;
  for (let i = 1; i < samples.length; i++) {
    if ((samples[i - 1] < 0) !== (samples[i] < 0)) crossings++;
  }
  return crossings / 2 / (samples.length / rate);
}

/** Root mean square of PCM16 samples. */
export function rms(samples: Int16Array): number {
  let sum = 0;
  for (const s of samples) sum += s * s;
  return samples.length ? Math.sqrt(sum / samples.length) : 0;
}
