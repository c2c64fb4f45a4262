/**
 * An in-process conversation engine for media tests: the test drives the engine's events (audio,
 * responses, barge-in) directly and sees what the session sent back (user audio, playout reports).
 *
 * @module
 */
import type {
  CloseResult,
  ConnectRequest,
  ProviderBridge,
  ProviderConnection,
  ProviderEvents,
} from "../src/providers/types.ts";

/** One connection made through the fake bridge. */
export interface FakeConnection extends ProviderConnection {
  events: ProviderEvents;
  sessionId: string;
  userAudio: Uint8Array[];
  played: { responseId: string; playedMs: number; interrupted: boolean }[];
  closed: boolean;
}

/** A bridge whose connections the test controls. */
export class FakeBridge implements ProviderBridge {
  readonly connections: FakeConnection[] = [];

  constructor(readonly rates = { input: 24000, output: 24000 }) {}

  /** The latest connection of a session. */
  of(sessionId: string): FakeConnection {
    const c = this.connections.findLast((x) => x.sessionId === sessionId);
    if (!c) throw new Error(`no connection for ${sessionId}`);
    return c;
  }

  connect(req: ConnectRequest): Promise<ProviderConnection> {
    req.credentials.zero();
    let release!: () => void;
    const released = new Promise<void>((r) => release = r);
    const conn: FakeConnection = {
      events: req.events,
      sessionId: req.sessionId,
      userAudio: [],
      played: [],
      closed: false,
      inputSampleRate: this.rates.input,
      outputSampleRate: this.rates.output,
      sendUserAudio(pcm) {
        conn.userAudio.push(pcm.slice());
      },
      reportPlayed(responseId, playedMs, interrupted) {
        conn.played.push({ responseId, playedMs, interrupted });
      },
      close(): Promise<CloseResult> {
        conn.closed = true;
        release();
        return Promise.resolve({ clean: true });
      },
      released,
    };
    this.connections.push(conn);
    return Promise.resolve(conn);
  }
}

/** A sine tone, PCM16 mono. */
export function tone(samples: number, rate: number, hz = 220, amplitude = 9000, offset = 0): Int16Array {
  const out = new Int16Array(samples);
  for (let i = 0; i < samples; i++) {
    out[i] = Math.round(amplitude * Math.sin(2 * Math.PI * hz * (offset + i) / rate));
  }
  return out;
}

/** Speech-like audio for a fake engine: a 220 Hz tone whose loudness rises and falls 3 times a second. */
export function speechLike(seconds: number, rate = 24000): Int16Array[] {
  const chunks: Int16Array[] = [];
  const n = rate / 50;
  for (let i = 0; i < seconds * 50; i++) {
    const c = tone(n, rate, 220, 12000, i * n);
    for (let j = 0; j < n; j++) {
      c[j] = Math.round(c[j] * Math.abs(Math.sin(Math.PI * 3 * (i * n + j) / rate)));
    }
    chunks.push(c);
  }
  return chunks;
}
