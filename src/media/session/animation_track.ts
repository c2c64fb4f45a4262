/**
 * The animation track of one session: the avatar's face on the media timeline (visemes, eyes, look, head),
 * read by both the renderer (the video pipeline draws frame `k` with {@link AnimationTrack.frame}'s face)
 * and the clients that draw the avatar themselves (video-free clients get its changes as animation
 * messages through the fan-out). The face itself, lip sync included, is `../lipsync/session_face.ts`; this
 * part decides each frame's face once, keeps the latest (a video client that arrives is shown it at once)
 * and tells video-free clients only what changed. It needs no video pipeline: a session whose only clients
 * are video-free computes faces and sends messages with no encoder running.
 *
 * @module
 */
import type { FaceState } from "../motion.ts";
import { SessionFace, type SessionFaceOptions } from "../lipsync/session_face.ts";
import type { TimelineViseme } from "../lipsync/timeline.ts";
import { VISEME_COUNT } from "../lipsync/visemes.ts";
import type { AnimationMessage } from "../transports/transport.ts";

/**
 * With no video client, the visemes of a frame's instant are decided this much later on the timeline than
 * for a video frame (ms), with that much more look-ahead from an engine speaking in real time. No picture
 * shows them at the frame's deadline: video-free clients get them as messages, and play the sound they go
 * with later than the clock by their buffer (50 ms or more), so a decision made up to this much after the
 * frame still reaches them before its sound.
 */
export const VIDEO_FREE_DECISION_DELAY_MS = 20;

/** A video-free client gets the head's pose every this many frames (5 a second at 25 fps). */
export const HEAD_EVERY_FRAMES = 5;

/** Where the animation track's messages go, and whether anyone reads them. */
export interface AnimationOutlet {
  /** Video-free clients now (face and head changes are told only while there is one). */
  readonly animationClients: number;
  animation(message: AnimationMessage): void;
}

/** The animation track of one session. */
export class AnimationTrack {
  /** The face (lip sync, blinks, looks, head), fed by the engine's events and placed by the audio playout. */
  readonly face: SessionFace;
  readonly #out: AnimationOutlet;
  readonly #frameMs: number;
  /** The face of the latest frame instant (rendered at once when a video client arrives). */
  #last: { k: number; face: FaceState } | null = null;
  /** The storage {@link #keep} copies into (one per session: no allocation per frame). */
  readonly #kept: { k: number; face: FaceState } = {
    k: -1,
    face: {
      visemes: new Float32Array(VISEME_COUNT),
      eyes: "open",
      look: "neutral",
      headDx: 0,
      headDy: 0,
      mode: "idle",
    },
  };
  /** What video-free clients were last told (compared field by field: no string per frame). */
  readonly #told: { mode: string; eyes: string; look: string; headDx: number; headDy: number } = {
    mode: "",
    eyes: "",
    look: "",
    headDx: NaN,
    headDy: NaN,
  };

  constructor(face: SessionFaceOptions, frameMs: number, out: AnimationOutlet) {
    this.face = new SessionFace(face);
    this.#frameMs = frameMs;
    this.#out = out;
    // Video-free clients get every change of the dominant viseme, stamped on the audio's timeline.
    this.face.subscribe((v) => out.animation({ type: "viseme", t_ms: v.t_ms, viseme: v.viseme }));
  }

  /**
   * Frame `k`'s face: the face at the middle of the frame's display time (a sound's mouth is on screen
   * within half a frame of the sound); the frame is its visemes' deadline (they are decided now, if not
   * yet) — with `video` false (no video client: nobody sees this frame), {@link VIDEO_FREE_DECISION_DELAY_MS}
   * earlier on the timeline. The face is kept as the latest and its changes told; the object is reused by the next call.
   */
  frame(k: number, video = true): FaceState {
    const ms = (k + 0.5) * this.#frameMs;
    const face = this.face.faceAt(ms, video ? ms : ms - VIDEO_FREE_DECISION_DELAY_MS);
    this.#keep(k, face);
    this.#tell(k, face);
    return face;
  }

  /**
   * The face for a keyframe of frame `k`, which the clock has passed already (perhaps with nobody watching,
   * its face not computed then): the face kept for it, else the face at its instant. A copy the renderer may
   * hold while later frames are decided; it is kept as the latest.
   */
  keyframe(k: number): FaceState {
    const kept = this.#last?.k === k ? this.#last.face : null;
    // A copy of the kept face: the renderer may read it after the next frame's face is kept in its place.
    const face = kept
      ? { ...kept, visemes: kept.visemes.slice() }
      : this.face.faceAt((k + 0.5) * this.#frameMs);
    this.#keep(k, face);
    return face;
  }

  /** Listens to the visemes stamped on the media timeline; returns the unsubscribe call. */
  subscribeVisemes(listener: (v: TimelineViseme) => void): () => void {
    return this.face.subscribe(listener);
  }

  /** Keeps frame `k`'s face (copied in place: the face handed out is reused by the next call). */
  #keep(k: number, face: FaceState): void {
    const kept = this.#kept;
    kept.k = k;
    kept.face.visemes.set(face.visemes);
    kept.face.eyes = face.eyes;
    kept.face.look = face.look;
    kept.face.headDx = face.headDx;
    kept.face.headDy = face.headDy;
    kept.face.mode = face.mode;
    this.#last = kept;
  }

  /**
   * Tells video-free clients what changed of the face at frame `k`'s instant: its state, eyes and look
   * at once, the head's pose every {@link HEAD_EVERY_FRAMES} frames (the client interpolates).
   */
  #tell(k: number, face: FaceState): void {
    if (!this.#out.animationClients) return;
    const t = Math.round((k + 0.5) * this.#frameMs);
    const told = this.#told;
    if (face.mode !== told.mode || face.eyes !== told.eyes || face.look !== told.look) {
      told.mode = face.mode;
      told.eyes = face.eyes;
      told.look = face.look;
      this.#out.animation({ type: "face", t_ms: t, state: face.mode, eyes: face.eyes, look: face.look });
    }
    if (k % HEAD_EVERY_FRAMES === 0 && (face.headDx !== told.headDx || face.headDy !== told.headDy)) {
      told.headDx = face.headDx;
      told.headDy = face.headDy;
      this.#out.animation({ type: "head", t_ms: t, dx: face.headDx, dy: face.headDy });
    }
  }
}
