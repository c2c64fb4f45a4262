/**
 * The animation track of a `webrtc_sfu` session's video-free clients, on its way to Janus's data channel:
 * each message (`viseme`, `face`, `head`, as a video-free WebSocket client gets them) is held until its
 * stamp is due on the media clock and then sent as one datagram to the mountpoint's data port, as the
 * audio is paced (`AUDIO_LEAD_MS` ahead). Why paced, not sent as soon as known:
 *
 * - the message then crosses the network beside the sound of the same instant (same ICE path, same
 *   moment), so the player can place the stamps on the sound it plays from the messages' own arrival
 *   times (docs/media-plane.md, "Video-free over WebRTC"), with no clock shared over another path;
 * - barge-in: what is not yet due when an `interrupt` comes is dropped here, so the cut speech's mouth
 *   never leaves (the data channel is unordered and unreliable: nothing sent can be recalled).
 *
 * The latest message of each type is kept: a client that joins is told the face and head at once.
 *
 * **Loss.** The channel never retransmits, and the track sends only changes: a lost viseme change held the
 * mouth until the next one (bench:network, 3 % loss: mouth frozen up to 330 ms while the sound played). So
 * each datagram also carries the {@link REDUNDANT_PREVIOUS} messages sent before it (`prev`), and when no
 * newer message follows within {@link REPEAT_AFTER_MS}, the last datagram goes again (`repeat: true`): a
 * message lost once is in the next datagram, at most that long later. The player applies each message once
 * (by type and stamp) and times its stamp map only by first sends that arrived (sdk/player_webrtc.js).
 *
 * @module
 */
import type { AnimationMessage } from "../transport.ts";

/** Messages held at most (a runaway producer cannot grow the queue without bound). */
const MAX_QUEUED = 2000;
/** Messages sent before it that each datagram carries again (`prev`). */
export const REDUNDANT_PREVIOUS = 2;
/** The last datagram is sent once more when no newer one follows within this long (ms). */
export const REPEAT_AFTER_MS = 40;

/** What the channel needs. */
export interface AnimationChannelDeps {
  /** Sends one message's text (a datagram to the data port). */
  send(text: string): void;
  /** The media clock, ms. */
  timelineMs(): number;
  /** How long before its stamp a message is sent, ms (the audio's lead). */
  leadMs: number;
}

/** The paced animation messages of one session. */
export class AnimationChannel {
  readonly #d: AnimationChannelDeps;
  #queue: AnimationMessage[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  readonly #latest = new Map<string, AnimationMessage>();
  #sent = 0;
  /** The last messages sent, oldest first (carried again by the next datagrams). */
  #recent: AnimationMessage[] = [];
  /** The last datagram's message and what it carried, until it is repeated or superseded. */
  #last: { message: AnimationMessage; prev: AnimationMessage[] } | null = null;
  #repeatTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(deps: AnimationChannelDeps) {
    this.#d = deps;
  }

  /** Messages sent so far (each once: a datagram's copies of earlier ones and repeats are not counted). */
  get sent(): number {
    return this.#sent;
  }

  /** The latest message of each type (face, head, viseme), for a joining client. */
  latest(): AnimationMessage[] {
    return [...this.#latest.values()];
  }

  /** A message of the animation track: sent when its stamp is due (at once when it is late). */
  push(message: AnimationMessage): void {
    if (this.#closed) return;
    this.#latest.set(message.type, message);
    // Kept in stamp order (messages of one type come in order; types may interleave).
    let i = this.#queue.length;
    while (i > 0 && this.#queue[i - 1].t_ms > message.t_ms) i--;
    this.#queue.splice(i, 0, message);
    if (this.#queue.length > MAX_QUEUED) this.#queue.shift();
    this.#pace();
  }

  /** Barge-in at `tMs`: what is stamped after the cut and not yet sent is dropped. */
  interrupt(tMs: number): void {
    this.#queue = this.#queue.filter((m) => m.t_ms <= tMs);
    const v = this.#latest.get("viseme");
    if (v && v.t_ms > tMs) this.#latest.delete("viseme");
    // (nothing stamped after the cut goes again)
    this.#recent = this.#recent.filter((m) => m.t_ms <= tMs);
    if (this.#last && this.#last.message.t_ms > tMs) this.#last = null;
    this.#pace();
  }

  #pace = (): void => {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#closed) return;
    const now = this.#d.timelineMs();
    const lastBefore = this.#last;
    while (this.#queue.length && this.#queue[0].t_ms <= now + this.#d.leadMs) {
      const m = this.#queue.shift()!;
      const prev = this.#recent.slice();
      this.#datagram(m, prev, false);
      this.#recent.push(m);
      if (this.#recent.length > REDUNDANT_PREVIOUS) this.#recent.shift();
      this.#last = { message: m, prev };
    }
    if (this.#last !== lastBefore) {
      // Something was sent: the last of it is repeated if nothing newer follows in time.
      clearTimeout(this.#repeatTimer);
      this.#repeatTimer = setTimeout(this.#repeat, REPEAT_AFTER_MS);
    }
    if (this.#queue.length) {
      const wait = Math.max(1, Math.ceil(this.#queue[0].t_ms - this.#d.leadMs - now));
      this.#timer = setTimeout(this.#pace, wait);
    }
  };

  /** Sends one datagram: the message, the ones before it, and whether it is a repeat. */
  #datagram(message: AnimationMessage, prev: AnimationMessage[], repeat: boolean): void {
    if (!repeat) this.#sent++;
    const body = repeat ? { ...message, prev, repeat } : prev.length ? { ...message, prev } : message;
    try {
      this.#d.send(JSON.stringify(body));
    } catch { /* the socket is closing */ }
  }

  /** No newer datagram followed the last one: it goes once more. */
  #repeat = (): void => {
    this.#repeatTimer = undefined;
    const last = this.#last;
    this.#last = null;
    if (this.#closed || !last) return;
    this.#datagram(last.message, last.prev, true);
  };

  /** Stops: nothing more is sent. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    clearTimeout(this.#repeatTimer);
    this.#timer = undefined;
    this.#repeatTimer = undefined;
    this.#queue = [];
  }
}
