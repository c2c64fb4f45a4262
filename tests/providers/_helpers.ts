/**
 * Helpers of the vendor bridge tests: a harness with the real bridges (pointed at the fakes through the
 * `SVC_VENDOR*` variables, trusting the tests' CA) and, when asked, a real media plane; decoding what a
 * media client received; and a bridge wrapper that keeps the sessions' credential holders.
 *
 * @module
 */
import { loadConfig } from "../../src/config.ts";
import { MediaPlane } from "../../src/media/media_plane.ts";
import { createLogger } from "../../src/log.ts";
import type { ConnectRequest, ProviderBridge } from "../../src/providers/types.ts";
import type { CredentialHolder } from "../../src/auth/credential_holder.ts";
import { testTls } from "../../testing/fixtures.ts";
import {
  createHarness,
  type Harness,
  type HarnessOptions,
  type JsonResponse,
} from "../../testing/harness.ts";
import { smallRenderer } from "../../testing/media.ts";
import { until } from "../../testing/fakes/server.ts";
import { prng } from "../../src/media/motion.ts";
import type { AvatarSessionMedia } from "../../src/media/session_media.ts";

export { testTls };

/** A test context: the harness, its served base URL and an API key. */
export interface VendorContext {
  h: Harness;
  base: string;
  key: string;
  plane: MediaPlane | null;
  /** `POST /v1/sessions` with `body`. */
  create(body: unknown): Promise<JsonResponse>;
  /** The media WebSocket URL of a session. */
  wsUrl(sessionId: string): string;
  /** GET of a session. */
  // deno-lint-ignore no-explicit-any
  get(sessionId: string): Promise<any>;
}

/** Runs `fn` with a harness whose bridges reach the fakes (and a media plane when `media` is true). */
export async function withVendors(
  env: Record<string, string>,
  fn: (ctx: VendorContext) => Promise<void>,
  options: { media?: boolean; harness?: Partial<HarnessOptions> } = {},
): Promise<void> {
  const plane = options.media
    ? await MediaPlane.create({
      config: { ...loadConfig({}).media, width: 256, height: 256 },
      publicUrl: "http://localhost:8787",
      logger: createLogger({ sink: () => {} }),
      renderer: await smallRenderer(),
    })
    : null;
  const h = await createHarness({
    caCerts: [testTls.caPem],
    env: { SVC_PROVIDER_CONNECT_TIMEOUT_MS: "5000", ...env },
    ...(plane ? { mediaPlane: plane } : {}),
    ...options.harness,
  });
  try {
    const base = h.serve();
    const key = await h.key("proj_vendor");
    await fn({
      h,
      base,
      key,
      plane,
      create: (body) => h.req("POST", "/v1/sessions", { key, body }),
      wsUrl: (sid) => `${base.replace("http", "ws")}/media/v0/sessions/${sid}`,
      get: async (sid) => (await h.req("GET", `/v1/sessions/${sid}`, { key })).body,
    });
  } finally {
    await h.close();
  }
}

/** Decodes the audio of a recorded fMP4 stream to 48 kHz mono PCM16 with ffmpeg. */
export async function decodeStreamAudio(binaries: Uint8Array[]): Promise<Int16Array> {
  const dir = await Deno.makeTempDir();
  try {
    const all = new Uint8Array(binaries.reduce((n, b) => n + b.length, 0));
    let o = 0;
    for (const b of binaries) {
      all.set(b, o);
      o += b.length;
    }
    await Deno.writeFile(`${dir}/s.mp4`, all);
    const out = await new Deno.Command("ffmpeg", {
      args: [
        "-hide_banner",
        "-v",
        "error",
        "-i",
        `${dir}/s.mp4`,
        "-vn",
        "-f",
        "s16le",
        "-ac",
        "1",
        "-ar",
        "48000",
        "-",
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!out.success) throw new Error(new TextDecoder().decode(out.stderr));
    return new Int16Array(out.stdout.buffer, 0, out.stdout.length >> 1);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Milliseconds of 10 ms windows (48 kHz) louder than −30 dBFS. */
export function loudMs(pcm: Int16Array): number {
  let loud = 0;
  for (let i = 0; i + 480 <= pcm.length; i += 480) {
    let sum = 0;
    for (let j = i; j < i + 480; j++) sum += pcm[j] * pcm[j];
    if (Math.sqrt(sum / 480) > 1036) loud += 10;
  }
  return loud;
}

/** A bridge that keeps every session's credential holder (to check they are zeroed). */
export class KeepingHolders implements ProviderBridge {
  readonly holders: CredentialHolder[] = [];
  constructor(readonly inner: ProviderBridge) {}
  connect(request: ConnectRequest) {
    this.holders.push(request.credentials);
    return this.inner.connect(request);
  }
}

/** Samples of several chunks, concatenated. */
export function concat(chunks: Int16Array[]): Int16Array {
  const out = new Int16Array(chunks.reduce((n, c) => n + c.length, 0));
  let o = 0;
  for (const c of chunks) {
    out.set(c, o);
    o += c.length;
  }
  return out;
}

/** `n` chunks of `ms` of a tone at `rate`, continuous across chunks. */
export function toneChunks(n: number, ms: number, rate: number, hz = 300, amplitude = 10_000): Int16Array[] {
  const size = Math.round(rate * ms / 1000);
  return Array.from({ length: n }, (_, k) =>
    Int16Array.from(
      { length: size },
      (_, i) => Math.round(amplitude * Math.sin(2 * Math.PI * hz * (k * size + i) / rate)),
    ));
}

/**
 * Waits for a barge-in point in a long reply sent at once (3 s here): most of it queued (2.5 s), then the
 * media clock 300 ms further on, so some of it has played and most of it is still queued, however busy
 * the machine. (Waiting a fixed time instead depended on how fast the reply arrived.)
 */
export async function midReply(media: AvatarSessionMedia): Promise<void> {
  await until(() => media.stats().queuedSamples >= 2.5 * 48000, 20_000, "the reply queued");
  const from = media.stats().audioWritten;
  await until(() => media.stats().audioWritten >= from + 0.3 * 48000, 20_000, "some of the reply played");
}

/**
 * Streams `seconds` of a continuous tone (24 kHz PCM16, the media plane's microphone format) as a browser
 * on a poor network would: `frameMs` frames, each sent ±`jitterMs` (seeded) around when it was captured, and
 * the frames due during one `stallMs` stall (from `stallAtMs`) sent together at its end. Resolves once the
 * last frame went out.
 */
export async function streamSpeech(
  ws: WebSocket,
  o: {
    seconds: number;
    frameMs: number;
    jitterMs: number;
    stallAtMs: number;
    stallMs: number;
    seed?: number;
  },
): Promise<void> {
  const random = prng(o.seed ?? 7);
  const frames = toneChunks(Math.round(o.seconds * 1000 / o.frameMs), o.frameMs, 24000, 300);
  const start = performance.now();
  let last = 0;
  for (let k = 0; k < frames.length; k++) {
    let at = (k + 1) * o.frameMs + (random() * 2 - 1) * o.jitterMs;
    if (at >= o.stallAtMs && at < o.stallAtMs + o.stallMs) at = o.stallAtMs + o.stallMs;
    at = Math.max(at, last);
    last = at;
    const wait = start + at - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    ws.send(new Uint8Array(frames[k].buffer));
  }
}

/**
 * Where a tone sits in what a vendor received: the span from its first to its last loud sample, seconds, and
 * the longest run of near-silence inside it, ms (silence spliced into the speech shows in both).
 */
export function toneSpan(samples: Int16Array, rate: number): { spanS: number; longestQuietMs: number } {
  let first = -1;
  let last = -1;
  for (let i = 0; i < samples.length; i++) {
    if (Math.abs(samples[i]) > 3000) {
      if (first < 0) first = i;
      last = i;
    }
  }
  let run = 0;
  let longest = 0;
  for (let i = first; i <= last && first >= 0; i++) {
    run = Math.abs(samples[i]) < 200 ? run + 1 : 0;
    longest = Math.max(longest, run);
  }
  return { spanS: first < 0 ? 0 : (last - first + 1) / rate, longestQuietMs: longest * 1000 / rate };
}
