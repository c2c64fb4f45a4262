/**
 * Delivery of one session's stream to its media clients: every client gets the greeting and the init
 * segment, then the cached fragments from the latest keyframe (so it starts decoding at once, within one
 * GOP), then live fragments — as fMP4, or in the lighter framing for clients that asked for it
 * (`frames.ts`). A client whose unsent backlog passes the limit is closed (4408) instead of being waited for:
 * sending never blocks, so a slow client cannot stall the renderer or anyone else.
 *
 * @module
 */
import { MEDIA_CLOSE } from "../../../vocabulary/close_codes.ts";
import { FRAME_HEADER_BYTES, type FrameUnit, frameView } from "./frames.ts";

/**
 * Audio fragments kept for joiners while no video is cached (20 ms each: 200 ms, the most the playout
 * writes ahead, 120 ms, and the 60 ms a joiner of the lighter framing is sent from behind the clock).
 * Fragments kept longer outlive the young generation's collections and are promoted: old-generation garbage.
 */
export const AUDIO_ONLY_CACHE = 10;

/** How a client gets the media: fMP4 fragments (the default) or the lighter framing (`frames.ts`). */
export type Framing = "fmp4" | "frames";

/** The socket side of a media client (a WebSocket in production). */
export interface MediaClient {
  /** The framing the client asked for (default fMP4; a video-free client always gets the lighter one). */
  readonly framing?: Framing;
  /** False for a video-free client (`video=0`): audio and the animation track, no video. */
  readonly video?: boolean;
  /**
   * Sends a message. Binary data is valid only during the call (frames of the lighter framing are built in
   * a buffer that is reused): a client that keeps it copies it; a WebSocket's `send` does.
   */
  send(data: Uint8Array | string): void;
  /** Bytes queued for sending and not yet handed to the network. */
  readonly bufferedAmount: number;
  close(code: number, reason: string): void;
}

/** One media segment as published. */
export interface Fragment {
  kind: "video" | "audio";
  /** The fMP4 media segment (may be a getter that builds it on first use). */
  readonly data: Uint8Array;
  /**
   * The same media's units for the lighter framing, framed as they are sent (`frames.ts`): one per access
   * unit or Opus packet (none: fMP4 only; may be a getter that lists them on first use).
   */
  readonly units?: readonly FrameUnit[];
  /** Video keyframe. */
  key: boolean;
  /** Presentation interval, ms on the session's media timeline. */
  startMs: number;
  endMs: number;
}

/** Limits of a fan-out. */
export interface FanoutLimits {
  /** A client whose backlog exceeds this many bytes is closed with 4408. */
  maxBufferedBytes: number;
  /** More clients than this are refused with 4429. */
  maxClients: number;
}

/** The clients of one session and the keyframe cache they join from. */
export class Fanout {
  /** Clients and the bytes of their join burst (allowed on top of the backlog limit). */
  readonly #clients = new Map<MediaClient, { burst: number }>();
  #cache: Fragment[] = [];
  /** The cache starts at a keyframe (else it holds audio only, bounded to {@link AUDIO_ONLY_CACHE}). */
  #videoCached = false;
  #init: Uint8Array | null = null;
  #hello: ((framing: Framing, video: boolean) => string) | null = null;
  /** Clients closed for being too slow. */
  slowClosed = 0;
  /** Bytes sent (all clients). */
  bytesSent = 0;

  constructor(readonly limits: FanoutLimits, readonly onCountChanged: (count: number) => void) {}

  /** Clients connected now. */
  get count(): number {
    return this.#clients.size;
  }

  /** Clients that want the video. */
  get videoCount(): number {
    let n = 0;
    for (const c of this.#clients.keys()) if (c.video !== false) n++;
    return n;
  }

  /** Video-free clients. */
  get animationCount(): number {
    return this.#clients.size - this.videoCount;
  }

  /**
   * Sets the JSON greeting (built when a client joins, for its framing) and the init segment every fMP4
   * client receives first.
   */
  setInit(
    hello: Record<string, unknown> | ((framing: Framing, video: boolean) => Record<string, unknown>),
    init: Uint8Array,
  ): void {
    this.#hello = (framing, video) =>
      JSON.stringify(typeof hello === "function" ? hello(framing, video) : hello);
    this.#init = init;
  }

  /**
   * Adds a client: sends the greeting, the init segment (fMP4) and the fragments since the latest
   * keyframe — to a client of the lighter framing, which decodes the pictures itself and plays the sound on
   * its own clock, only the audio that is not past yet (`nowMs`, the media clock now).
   */
  add(client: MediaClient, nowMs = -Infinity): boolean {
    if (this.#clients.size >= this.limits.maxClients) {
      client.close(MEDIA_CLOSE.TOO_MANY_CLIENTS.code, MEDIA_CLOSE.TOO_MANY_CLIENTS.reason);
      return false;
    }
    if (!this.#init || !this.#hello) throw new Error("fan-out has no init segment yet");
    const video = client.video !== false;
    const frames = client.framing === "frames" || !video;
    const hello = this.#hello(frames ? "frames" : "fmp4", video);
    const cache = frames
      ? this.#cache.filter((f) =>
        (f.kind === "video" && video) || (f.kind === "audio" && f.endMs > nowMs - 60)
      )
      : this.#cache;
    // The join burst (up to one GOP) is sent at once; the backlog limit applies on top of it.
    let burst = hello.length + (frames ? 0 : this.#init.length);
    for (const f of cache) {
      burst += frames
        ? (f.units ?? []).reduce((n, u) => n + FRAME_HEADER_BYTES + u.payload.length, 0)
        : f.data.length;
    }
    this.#clients.set(client, { burst });
    this.#send(client, hello, false);
    if (!frames) this.#send(client, this.#init, false);
    for (const f of cache) this.#sendFragment(client, f, false);
    this.onCountChanged(this.#clients.size);
    return true;
  }

  /** Forgets a client (it closed). */
  remove(client: MediaClient): void {
    if (this.#clients.delete(client)) this.onCountChanged(this.#clients.size);
  }

  /** Publishes a fragment to every client and keeps it for joiners. */
  publish(f: Fragment): void {
    if (f.kind === "video" && f.key) {
      // Joiners start at this keyframe: keep only the audio that still overlaps it.
      this.#cache = this.#cache.filter((c) => c.kind === "audio" && c.endMs > f.startMs);
      this.#videoCached = true;
    } else if (f.kind === "audio" && !this.#videoCached && this.#cache.length >= AUDIO_ONLY_CACHE) {
      // No video (no video client): joiners get only the sound that is not past; keep the last moments.
      this.#cache.splice(0, this.#cache.length - AUDIO_ONLY_CACHE + 1);
    }
    this.#cache.push(f);
    for (const c of [...this.#clients.keys()]) {
      if (f.kind === "video" && c.video === false) continue;
      this.#sendFragment(c, f, true);
    }
  }

  /** The video stopped: the frames kept for joiners are dropped (a joiner waits for the next keyframe). */
  dropVideo(): void {
    this.#cache = this.#cache.filter((f) => f.kind === "audio");
    this.#videoCached = false;
  }

  #sendFragment(client: MediaClient, f: Fragment, check: boolean): void {
    if (client.framing !== "frames" && client.video !== false) this.#send(client, f.data, check);
    else for (const unit of f.units ?? []) this.#send(client, frameView(unit), check);
  }

  /**
   * Sends a JSON control message to every client (or those `only` picks); returns how many it was handed
   * to.
   */
  broadcast(message: Record<string, unknown>, only?: (c: MediaClient) => boolean): number {
    const text = JSON.stringify(message);
    let sent = 0;
    for (const c of [...this.#clients.keys()]) {
      if (only && !only(c)) continue;
      this.#send(c, text);
      if (this.#clients.has(c)) sent++;
    }
    return sent;
  }

  /** Sends a text message to one client (with the backlog check). */
  sendTo(client: MediaClient, text: string): void {
    this.#send(client, text);
  }

  /** Closes every client with `code` and `reason`. */
  closeAll(code: number, reason: string): void {
    const all = [...this.#clients.keys()];
    this.#clients.clear();
    for (const c of all) {
      try {
        c.close(code, reason);
      } catch { /* already closed */ }
    }
    if (all.length) this.onCountChanged(0);
    this.#cache = [];
  }

  #send(client: MediaClient, data: Uint8Array | string, check = true): void {
    const state = this.#clients.get(client);
    if (!state) return;
    if (check && client.bufferedAmount > this.limits.maxBufferedBytes + state.burst) {
      this.slowClosed++;
      this.#clients.delete(client);
      try {
        client.close(MEDIA_CLOSE.TOO_SLOW.code, MEDIA_CLOSE.TOO_SLOW.reason);
      } catch { /* already closed */ }
      this.onCountChanged(this.#clients.size);
      return;
    }
    try {
      client.send(data);
      this.bytesSent += typeof data === "string" ? data.length : data.length;
    } catch {
      this.#clients.delete(client);
      this.onCountChanged(this.#clients.size);
    }
  }
}
