/**
 * Media-plane test helpers: a harness with a real media plane (real ffmpeg) over a fake engine, a media
 * WebSocket client that records what it receives, and a small fMP4 fragment reader.
 *
 * @module
 */
import { loadConfig, type MediaConfig } from "../src/config.ts";
import { loadArtBank } from "../src/media/art_bank.ts";
import { CATALOG } from "../src/media/catalog.ts";
import { FrameCache } from "../src/media/frame_cache.ts";
import { MediaPlane, type MediaPlaneOptions } from "../src/media/media_plane.ts";
import { ReferenceRenderer } from "../src/media/reference_renderer.ts";
import type { FrameRequest, Renderer, VideoFormat } from "../src/media/renderer.ts";
import type { AvatarSessionMedia } from "../src/media/session_media.ts";
import { createLogger } from "../src/log.ts";
import { FakeBridge } from "./fake_bridge.ts";
import { engineBody } from "./fixtures.ts";
import { DEADLINE_MS } from "./deadline.ts";
import { createHarness, type Harness } from "./harness.ts";

let renderer: Promise<Renderer> | null = null;

/** A reference renderer at 256×256, 25 fps, shared by the tests of a module (art rasterised once). */
export function smallRenderer(): Promise<Renderer> {
  renderer ??= loadArtBank(CATALOG, 256, 256).then((art) =>
    new ReferenceRenderer(art, 25, new FrameCache(64e6))
  );
  return renderer;
}

/**
 * The small renderer with each frame's rendering passed through `around`, which gets the request, the small
 * renderer's own call for it and the format (to watch what the service asked for, or to mark the frame).
 */
export async function smallRendererAround(
  around: (
    req: FrameRequest,
    render: (req: FrameRequest) => Uint8Array | Promise<Uint8Array>,
    format: VideoFormat,
  ) => Uint8Array | Promise<Uint8Array>,
): Promise<Renderer> {
  const inner = await smallRenderer();
  return {
    format: inner.format,
    open(options) {
      const session = inner.open(options);
      return {
        renderFrame: (req) => around(req, (r) => session.renderFrame(r), inner.format),
        close: () => session.close(),
      };
    },
  };
}

/**
 * The small renderer with a watch on every frame it is asked for (`see` runs before the frame renders): what
 * the service knew of each frame (its face, its time) when it drew it.
 */
export function watchingRenderer(see: (req: FrameRequest) => void): Promise<Renderer> {
  return smallRendererAround((req, render) => {
    see(req);
    return render(req);
  });
}

/** A media test context. */
export interface MediaContext {
  h: Harness;
  plane: MediaPlane;
  fake: FakeBridge;
  /** Base http URL of the served app. */
  base: string;
  key: string;
  /** Creates a session on the fake engine; returns the create answer's body. */
  // deno-lint-ignore no-explicit-any
  create(extra?: Record<string, unknown>): Promise<any>;
  /** The media WebSocket URL of a session on the served app. */
  wsUrl(sessionId: string, query?: string): string;
  /** Every encoder process started, with its session. */
  encoders: { sessionId: string; pid: number }[];
  /** Speech placed on a media timeline (any session's): timeline sample `at`, `n` samples. */
  speech: { at: number; n: number }[];
  /** The running media of a session. */
  media(sessionId: string): AvatarSessionMedia;
}

/** Runs `fn` with a harness that has a media plane; closes everything afterwards. */
export async function withMedia(
  fn: (ctx: MediaContext) => Promise<void>,
  options: {
    media?: Partial<MediaConfig>;
    plane?: Partial<Pick<MediaPlaneOptions, "limits" | "renderer">>;
    env?: Record<string, string>;
  } = {},
): Promise<void> {
  // No spare encoders unless a test asks (`media: { encoderSpares: 1 }`): spawning one is a burst of CPU that
  // timing tests on a busy machine need not share.
  const config = { ...loadConfig({}).media, width: 256, height: 256, encoderSpares: 0, ...options.media };
  const logs: string[] = [];
  const encoders: { sessionId: string; pid: number }[] = [];
  const speech: { at: number; n: number }[] = [];
  const plane = await MediaPlane.create({
    observer: {
      encoderStarted: (sessionId, pid) => encoders.push({ sessionId, pid }),
      speechPlaced: (_index, at, n) => speech.push({ at, n }),
    },
    config,
    publicUrl: "http://localhost:8787",
    logger: createLogger({ sink: (l) => logs.push(l) }),
    renderer: options.plane?.renderer ?? await smallRenderer(),
    limits: options.plane?.limits,
  });
  const fake = new FakeBridge();
  const h = await createHarness({
    mediaPlane: plane,
    bridges: { external_engine: fake },
    env: options.env,
  });
  try {
    const base = h.serve();
    const key = await h.key("proj_media");
    await fn({
      h,
      plane,
      fake,
      base,
      key,
      async create(extra = {}) {
        const res = await h.req("POST", "/v1/sessions", {
          key,
          body: engineBody("wss://engine.test/v0", extra),
        });
        if (res.status !== 200) throw new Error(`create answered ${res.status} ${res.text}`);
        return res.body;
      },
      wsUrl(sessionId, query = "") {
        return `${base.replace("http", "ws")}/media/v0/sessions/${sessionId}${query}`;
      },
      encoders,
      speech,
      media(sessionId) {
        const live = plane.get(sessionId);
        if (!live) throw new Error(`no media for ${sessionId}`);
        return live.media;
      },
    });
  } finally {
    await h.close();
  }
}

/** One fMP4 media segment, as read back. */
export interface ReadSegment {
  track: number;
  baseTime: number;
  durations: number[];
  key: boolean;
  bytes: number;
}

/** Reads the track, decode time, sample durations and first-sample sync flag of a `moof`+`mdat`. */
export function readSegment(buf: Uint8Array): ReadSegment | null {
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const type = (o: number) => String.fromCharCode(buf[o + 4], buf[o + 5], buf[o + 6], buf[o + 7]);
  if (buf.length < 8 || type(0) !== "moof") return null;
  const seg: ReadSegment = { track: 0, baseTime: 0, durations: [], key: false, bytes: buf.length };
  const walk = (start: number, end: number) => {
    for (let o = start; o + 8 <= end;) {
      const size = dv.getUint32(o);
      const t = type(o);
      if (t === "traf") walk(o + 8, o + size);
      else if (t === "tfhd") seg.track = dv.getUint32(o + 12);
      else if (t === "tfdt") seg.baseTime = Number(dv.getBigUint64(o + 12));
      else if (t === "trun") {
        const n = dv.getUint32(o + 12);
        for (let i = 0; i < n; i++) {
          seg.durations.push(dv.getUint32(o + 20 + i * 12));
          if (i === 0) seg.key = (dv.getUint32(o + 20 + i * 12 + 8) & 0x00010000) === 0;
        }
      }
      o += size;
    }
  };
  walk(8, dv.getUint32(0));
  return seg;
}

/** A recording media WebSocket client. */
export class MediaClientRecorder {
  readonly ws: WebSocket;
  // deno-lint-ignore no-explicit-any
  readonly texts: any[] = [];
  readonly binaries: Uint8Array[] = [];
  /** Receive time (performance.now()) of each binary message. */
  readonly binaryTimes: number[] = [];
  closeCode: number | null = null;
  closeReason = "";
  readonly opened: Promise<void>;
  readonly closed: Promise<void>;

  constructor(url: string, protocols?: string[]) {
    this.ws = new WebSocket(url, protocols);
    this.ws.binaryType = "arraybuffer";
    this.opened = new Promise((resolve) => this.ws.addEventListener("open", () => resolve(), { once: true }));
    this.closed = new Promise((resolve) =>
      this.ws.addEventListener("close", (e) => {
        this.closeCode = e.code;
        this.closeReason = e.reason;
        resolve();
      }, { once: true })
    );
    this.ws.addEventListener("error", () => {});
    this.ws.addEventListener("message", (e) => {
      if (typeof e.data === "string") this.texts.push(JSON.parse(e.data));
      else {
        this.binaries.push(new Uint8Array(e.data as ArrayBuffer));
        this.binaryTimes.push(performance.now());
      }
    });
  }

  /** Connects with the token in the subprotocol (the SDK's way). */
  static withToken(url: string, token: string): MediaClientRecorder {
    return new MediaClientRecorder(url, ["avatar-media.v0", `bearer.${token}`]);
  }

  /** Media segments received so far (the init segment excluded). */
  segments(): ReadSegment[] {
    return this.binaries.map(readSegment).filter((s): s is ReadSegment => s !== null);
  }

  /** Waits until `predicate` holds (polling every 20 ms) or throws after `timeoutMs`. */
  async until(predicate: () => boolean, timeoutMs = DEADLINE_MS, what = "condition"): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /**
   * Closes (if needed) and waits for the close, at most {@link DEADLINE_MS}: a close handshake that never
   * completes fails the test, saying so, instead of holding the suite (a full run hung once in a test that
   * ends with this, 5 Dec).
   */
  async close(): Promise<void> {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) this.ws.close();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new Error(
              `the media socket did not close within ${DEADLINE_MS} ms (state ${this.ws.readyState})`,
            ),
          ),
        DEADLINE_MS,
      );
    });
    try {
      await Promise.race([this.closed, late]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * The first video frame a media client received, decoded by ffmpeg from the bytes it got (the init segment
 * and the first segments up to and including the first key frame's): I420, `width`×`height`.
 */
export async function decodeFirstVideoFrame(
  client: MediaClientRecorder,
  width: number,
  height: number,
): Promise<Uint8Array> {
  await client.until(() => client.segments().some((s) => s.track === 1 && s.key), DEADLINE_MS, "a key frame");
  const init = client.binaries.find((b) => readSegment(b) === null);
  if (!init) throw new Error("no init segment");
  const keyAt = client.binaries.findIndex((b) => {
    const s = readSegment(b);
    return s !== null && s.track === 1 && s.key;
  });
  const stream = [init, ...client.binaries.slice(0, keyAt + 1).filter((b) => readSegment(b) !== null)];
  const [first] = await decodeVideo(stream, width, height, 1);
  if (!first) throw new Error("decoded no frame");
  return first;
}

/**
 * The video frames of an fMP4 stream (init segment first), decoded by ffmpeg as they were coded (no frame
 * repeated or dropped to a constant rate): I420, `width`×`height`; at most `maxFrames`.
 */
export async function decodeVideo(
  stream: Uint8Array[],
  width: number,
  height: number,
  maxFrames?: number,
): Promise<Uint8Array[]> {
  const child = new Deno.Command("ffmpeg", {
    args: [
      ...["-hide_banner", "-loglevel", "error", "-i", "pipe:0", "-map", "0:v:0", "-fps_mode", "passthrough"],
      ...(maxFrames === undefined ? [] : ["-frames:v", String(maxFrames)]),
      ...["-f", "rawvideo", "-pix_fmt", "yuv420p", "pipe:1"],
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  for (const b of stream) await writer.write(b);
  await writer.close();
  const out = await child.output();
  if (!out.success) throw new Error(`ffmpeg: ${new TextDecoder().decode(out.stderr)}`);
  const size = width * height * 3 / 2;
  const frames: Uint8Array[] = [];
  for (let at = 0; at + size <= out.stdout.length; at += size) {
    frames.push(out.stdout.subarray(at, at + size));
  }
  return frames;
}

/** Waits for `predicate` (polling every 20 ms, at most `timeoutMs`). */
export async function until(
  predicate: () => boolean | Promise<boolean>,
  timeoutMs = DEADLINE_MS,
  what = "condition",
) {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Whether a process id is alive (not exited; zombies count as gone). */
export function processAlive(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return !/^\d+ \([^)]*\) Z/.test(stat);
  } catch {
    return false;
  }
}
