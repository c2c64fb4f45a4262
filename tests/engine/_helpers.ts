/**
 * Shared helpers for the reference engine tests: TLS material, synthetic audio, a fake TTS and a WebSocket
 * client that records every frame in order.
 *
 * @module
 */

import { DEADLINE_MS } from "../../testing/deadline.ts";
import {
  type EngineTlsMaterial,
  generateEngineTls,
  type ReferenceEngine,
  type Tts,
} from "../../engine/mod.ts";
import { pcm16ToBytes } from "../../src/speech/pcm.ts";

let tlsCache: Promise<EngineTlsMaterial> | undefined;

/** TLS material shared by the tests of one module (generated once). */
export function testTls(): Promise<EngineTlsMaterial> {
  return tlsCache ??= generateEngineTls();
}

/** The bearer token the test engines expect. */
export const TOKEN = "test-token-0123456789";

/**
 * A sine tone.
 *
 * @param ms duration
 * @param rate sample rate
 * @param amplitude peak amplitude (default 8000)
 * @param freq frequency in Hz (default 220)
 */
export function tone(ms: number, rate: number, amplitude = 8000, freq = 220): Int16Array {
  const n = Math.round(ms * rate / 1000);
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.round(amplitude * Math.sin(2 * Math.PI * freq * i / rate));
  return out;
}

/** Digital silence of `ms` at `rate`. */
export function silence(ms: number, rate: number): Int16Array {
  return new Int16Array(Math.round(ms * rate / 1000));
}

/**
 * Uniform white noise with a deterministic generator.
 *
 * @param ms duration
 * @param rate sample rate
 * @param amplitude peak amplitude (RMS is about amplitude / sqrt(3))
 * @param seed generator seed
 */
export function noise(ms: number, rate: number, amplitude: number, seed = 1): Int16Array {
  const n = Math.round(ms * rate / 1000);
  const out = new Int16Array(n);
  let state = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    out[i] = Math.round(((state >>> 0) / 0xffffffff * 2 - 1) * amplitude);
  }
  return out;
}

/** Joins sample arrays. */
export function join(...parts: Int16Array[]): Int16Array {
  const out = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** A {@link Tts} that returns a tone whose length is fixed per call, and records the calls. */
export class FakeTts implements Tts {
  readonly calls: Array<{ text: string; sampleRate: number }> = [];
  /**
   * @param ms duration of the audio returned for any text
   * @param delayMs simulated synthesis time
   */
  constructor(readonly ms: number, readonly delayMs = 0) {}
  async synthesize(text: string, sampleRate: number): Promise<Int16Array> {
    this.calls.push({ text, sampleRate });
    if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
    return tone(this.ms, sampleRate, 6000, 330);
  }
}

/** A frame received by {@link TestClient}. */
export type Received =
  | { kind: "json"; message: Record<string, unknown> & { type: string }; at: number }
  | { kind: "binary"; bytes: Uint8Array; at: number };

/** Options of {@link TestClient.connect}. */
export interface ConnectOptions {
  token?: string | null;
  protocols?: string[];
  caPem?: string | null;
}

/** A WebSocket client over wss that records frames and offers ordered waits. */
export class TestClient {
  readonly received: Received[] = [];
  readonly closed: Promise<CloseEvent>;
  readonly opened: Promise<boolean>;
  /** Message of the first `error` event, if any (e.g. a refused upgrade). */
  errorMessage: string | null = null;
  #cursor = 0;
  #waiters = new Set<() => void>();

  private constructor(readonly ws: WebSocket, private readonly httpClient: Deno.HttpClient | null) {
    ws.binaryType = "arraybuffer";
    ws.addEventListener("error", (e) => {
      this.errorMessage ??= (e as ErrorEvent).message ?? "error";
    });
    this.opened = new Promise((resolve) => {
      ws.addEventListener("open", () => resolve(true));
      ws.addEventListener("error", () => resolve(false));
      ws.addEventListener("close", () => resolve(false));
    });
    this.closed = new Promise((resolve) => ws.addEventListener("close", (e) => resolve(e)));
    ws.addEventListener("message", (e) => {
      const at = performance.now();
      if (typeof e.data === "string") this.received.push({ kind: "json", message: JSON.parse(e.data), at });
      else this.received.push({ kind: "binary", bytes: new Uint8Array(e.data as ArrayBuffer), at });
      for (const w of [...this.#waiters]) w();
    });
    this.closed.then(() => {
      for (const w of [...this.#waiters]) w();
    });
  }

  /**
   * Connects to `url` trusting the test CA.
   *
   * @param url engine URL
   * @param options token (null: no header), offered subprotocols, CA (null: system roots only)
   */
  static connect(url: string, options: ConnectOptions & { caPem: string | null }): TestClient {
    const token = options.token === undefined ? TOKEN : options.token;
    const httpClient = options.caPem ? Deno.createHttpClient({ caCerts: [options.caPem] }) : null;
    const ws = new WebSocket(url, {
      ...(httpClient ? { client: httpClient } : {}),
      headers: token === null ? {} : { authorization: `Bearer ${token}` },
      protocols: options.protocols ?? ["avatar-engine.v0"],
    });
    return new TestClient(ws, httpClient);
  }

  /** Sends a JSON message. */
  send(message: Record<string, unknown>): void {
    this.ws.send(JSON.stringify(message));
  }

  /** Sends a `session.start` with the given input rate (and optional overrides). */
  start(inputRate = 16000, overrides: Record<string, unknown> = {}): void {
    this.send({
      type: "session.start",
      protocol: "v0",
      session_id: "session:test",
      audio: {
        input: { encoding: "pcm_s16le", sample_rate: inputRate, channels: 1 },
        output: { encodings: ["pcm_s16le"], preferred_sample_rate: 24000 },
      },
      metadata: { avatar_id: "ada", bg_id: "studio" },
      ...overrides,
    });
  }

  /** Sends samples as binary frames of `frameMs`. */
  sendAudio(samples: Int16Array, rate: number, frameMs = 20): number {
    const step = Math.round(rate * frameMs / 1000);
    let bytes = 0;
    for (let i = 0; i < samples.length; i += step) {
      const frame = pcm16ToBytes(samples.subarray(i, i + step));
      bytes += frame.byteLength;
      this.ws.send(frame);
    }
    return bytes;
  }

  /**
   * Waits for the next received frame (after the previous match) satisfying `predicate`.
   *
   * @returns the frame and its index in {@link received}
   */
  async waitFor(
    predicate: (r: Received) => boolean,
    timeoutMs = DEADLINE_MS,
    what = "frame",
  ): Promise<{ frame: Received; index: number }> {
    const deadline = performance.now() + timeoutMs;
    while (true) {
      for (let i = this.#cursor; i < this.received.length; i++) {
        if (predicate(this.received[i])) {
          this.#cursor = i + 1;
          return { frame: this.received[i], index: i };
        }
      }
      const remaining = deadline - performance.now();
      if (remaining <= 0 || this.ws.readyState === WebSocket.CLOSED) {
        throw new Error(`timed out waiting for ${what}; got ${this.describe()}`);
      }
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.#waiters.delete(done);
          resolve();
        };
        const timer = setTimeout(done, remaining);
        this.#waiters.add(done);
      });
    }
  }

  /** Waits for the next JSON message of `type`. */
  async next(type: string, timeoutMs = DEADLINE_MS): Promise<Record<string, unknown>> {
    const { frame } = await this.waitFor(
      (r) => r.kind === "json" && r.message.type === type,
      timeoutMs,
      type,
    );
    return (frame as Extract<Received, { kind: "json" }>).message;
  }

  /** JSON messages received so far. */
  messages(): Array<Record<string, unknown> & { type: string }> {
    return this.received.flatMap((r) => r.kind === "json" ? [r.message] : []);
  }

  /** Short summary of what was received (for failure messages). */
  describe(): string {
    const types = this.messages().map((m) => m.type);
    const binaries = this.received.filter((r) => r.kind === "binary").length;
    return `[${types.join(", ")}] + ${binaries} binary frames`;
  }

  /** Waits for the close event (bounded). */
  async waitClosed(timeoutMs = DEADLINE_MS): Promise<CloseEvent> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      return await Promise.race([
        this.closed,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`socket not closed after ${timeoutMs} ms`)), timeoutMs);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Closes the socket (if open), waits for the close, and releases the HTTP client. */
  async dispose(): Promise<void> {
    if (this.ws.readyState === WebSocket.CONNECTING || this.ws.readyState === WebSocket.OPEN) {
      try {
        this.ws.close(1000, "test done");
      } catch {
        // ignore
      }
    }
    await this.waitClosed(5000).catch(() => {});
    this.httpClient?.close();
  }
}

/**
 * Runs `fn` with a started engine and clients that are all disposed afterwards, then closes the engine.
 */
export async function withEngine(
  start: () => Promise<ReferenceEngine>,
  fn: (engine: ReferenceEngine, connect: (options?: ConnectOptions) => Promise<TestClient>) => Promise<void>,
): Promise<void> {
  const engine = await start();
  const clients: TestClient[] = [];
  const tls = await testTls();
  const connect = async (options: ConnectOptions = {}) => {
    const client = TestClient.connect(engine.url, {
      ...options,
      caPem: options.caPem === undefined ? tls.caPem : options.caPem,
    });
    clients.push(client);
    await client.opened;
    return client;
  };
  try {
    await fn(engine, connect);
  } finally {
    await Promise.all(clients.map((c) => c.dispose()));
    await engine.close();
  }
}

/** Sleeps (bounded, cleared). */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
