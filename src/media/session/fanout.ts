/**
 * The fan-out of one session's media to its subscribers: the single place encoded video, encoded audio,
 * the animation track and control messages leave the session. A subscriber (the session's transport today;
 * a recorder, a video-free WebRTC data channel tomorrow) is one more entry in a set, not another field of
 * the session: the model is mediasoup's producers and consumers (one source, many outlets, each closed on
 * its own; /work/shared/reference/anchors.md A5b). The subscribers' demand (clients, video clients,
 * animation clients) is summed here, and the session's parts read it from here: the video pipeline runs
 * while `videoClients > 0`, the animation track is told while `animationClients > 0`, speech plays while
 * `clients > 0`.
 *
 * It also holds the stream's configuration (the init segment's contents: the H.264 configuration record
 * and the Opus head): nothing is delivered before it is complete, and a subscriber that comes later is
 * configured on arrival.
 *
 * @module
 */
import type {
  AnimationMessage,
  ControlMessage,
  EncodedAudioPacket,
  EncodedVideoFrame,
  MediaSubscriber,
  StreamConfig,
} from "../transports/transport.ts";

export type { MediaSubscriber };

/** The fan-out of one session. */
export class MediaFanout {
  readonly #subscribers = new Set<MediaSubscriber>();
  /** Builds the stream's configuration from the video's configuration record. */
  readonly #describe: (avcC: Uint8Array) => StreamConfig;
  #avcC: Uint8Array | null = null;
  #configured = false;
  #closed = false;

  constructor(describe: (avcC: Uint8Array) => StreamConfig) {
    this.#describe = describe;
  }

  /** Adds a subscriber (configured at once when the stream's configuration is known); returns its removal. */
  subscribe(subscriber: MediaSubscriber): () => void {
    this.#subscribers.add(subscriber);
    if (this.#configured) subscriber.configure(this.#describe(this.#avcC!));
    else this.#maybeConfigure();
    return () => {
      this.#subscribers.delete(subscriber);
    };
  }

  /** Clients of every subscriber. */
  get clients(): number {
    let n = 0;
    for (const s of this.#subscribers) n += s.clients;
    return n;
  }

  /** Video clients of every subscriber. */
  get videoClients(): number {
    let n = 0;
    for (const s of this.#subscribers) n += s.videoClients;
    return n;
  }

  /** Video-free clients of every subscriber. */
  get animationClients(): number {
    let n = 0;
    for (const s of this.#subscribers) n += s.animationClients;
    return n;
  }

  /** The stream's configuration is complete and was given (media flows). */
  get configured(): boolean {
    return this.#configured;
  }

  /** The video's configuration record, once known. */
  get avcC(): Uint8Array | null {
    return this.#avcC;
  }

  /**
   * The video's configuration record (from an encoder, or a cache): completes the stream's configuration,
   * or gives it again when a restarted encoder's differs. Returns true when the stream became configured now.
   */
  videoConfig(avcC: Uint8Array): boolean {
    const changed = this.#avcC !== null && !sameBytes(this.#avcC, avcC);
    this.#avcC = avcC;
    if (changed && this.#configured) {
      this.#configureAll();
      return false;
    }
    return this.#maybeConfigure();
  }

  #maybeConfigure(): boolean {
    if (this.#configured || !this.#avcC || this.#subscribers.size === 0) return false;
    this.#configureAll();
    this.#configured = true;
    return true;
  }

  #configureAll(): void {
    for (const s of this.#subscribers) s.configure(this.#describe(this.#avcC!));
  }

  /** An encoded video frame to every subscriber. */
  video(frame: EncodedVideoFrame): void {
    for (const s of this.#subscribers) s.video(frame);
  }

  /** An encoded audio packet to every subscriber (packets before the configuration are not delivered). */
  audio(packet: EncodedAudioPacket): void {
    if (!this.#configured || this.#closed) return;
    for (const s of this.#subscribers) s.audio(packet);
  }

  /**
   * The `pts` from which every audio packet given out is still unsent at every subscriber (so it can be taken
   * back: {@link retractAudio}); `Infinity` when some subscriber holds none, or sends at once.
   */
  audioUnsentFrom(): number {
    if (!this.#configured || this.#closed || this.#subscribers.size === 0) return Infinity;
    let from = -Infinity;
    for (const s of this.#subscribers) from = Math.max(from, s.audioUnsentFrom?.() ?? Infinity);
    return from;
  }

  /** Takes back the audio packets from `pts` on: every subscriber drops them unsent (see {@link audioUnsentFrom}). */
  retractAudio(pts: number): void {
    for (const s of this.#subscribers) s.retractAudio?.(pts);
  }

  /** An animation message to every subscriber. */
  animation(message: AnimationMessage): void {
    if (this.#closed) return;
    for (const s of this.#subscribers) s.animation(message);
  }

  /** The video encoder stopped. */
  videoStopped(): void {
    for (const s of this.#subscribers) s.videoStopped();
  }

  /** A control message to every subscriber's clients; returns how many it reached. */
  control(message: ControlMessage): number {
    let n = 0;
    for (const s of this.#subscribers) n += s.control(message);
    return n;
  }

  /** The session stops: no more audio or animation is delivered. */
  close(): void {
    this.#closed = true;
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
