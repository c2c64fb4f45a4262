/**
 * The renderer interface: what turns the avatar's face into video frames. The session's media plane
 * decides the face of each frame (visemes from the lip-sync engine, blinks, looks, head motion: a
 * `FaceState`); the reference renderer (sprites drawn as SVG) draws it; a GPU or neural renderer can
 * replace it without touching encoding, muxing or delivery.
 *
 * @module
 */
import type { AvatarLayers } from "./art/layers.ts";
import type { FaceState } from "./motion.ts";

/** Output geometry and rate of a renderer. */
export interface VideoFormat {
  /** Width in pixels (even). */
  width: number;
  /** Height in pixels (even). */
  height: number;
  /** Frames per second. */
  fps: number;
}

/** What one frame is rendered from. */
export interface FrameRequest {
  /** Frame number since the session's media started (0, 1, 2, …). */
  index: number;
  /** Presentation time of the frame, ms since the session's media started. */
  timeMs: number;
  /**
   * The avatar's audio played during this frame (from `timeMs` to one frame later, centred on the instant
   * its `face` is taken at): mono PCM16 at {@link FrameRequest.sampleRate}.
   */
  audio: Int16Array;
  /** Sample rate of `audio`. */
  sampleRate: number;
  /** Whether the avatar is speaking (a response is being played). */
  speaking: boolean;
  /**
   * The face to draw: viseme weights, eyes, look and head offset at the frame's time. Without it a
   * renderer animates an idle face itself.
   */
  face?: FaceState;
  /**
   * A frame buffer of the format's size that the caller owns and has finished with. A renderer that builds
   * a new frame may write it here and return this very buffer (nothing allocated per frame: a talking
   * avatar's 25 fresh frames a second otherwise cost ~10 MB/s of buffers, whose garbage collections held
   * up the worker's event loop for tens of milliseconds every few seconds); a renderer that returns another
   * buffer (a cached frame) leaves it untouched. The caller must not pass a buffer still being read.
   */
  into?: Uint8Array;
}

/** The rendering of one session. */
export interface RenderSession {
  /**
   * Renders one frame as planar `yuv420p` (width×height luma, then the U and V planes at quarter size).
   * The returned buffer is only read by the caller; a renderer may hand out shared (cached) buffers, and
   * must not change a buffer after returning it (except {@link FrameRequest.into}, the caller's own). An asynchronous renderer returns a promise; a frame
   * still pending when the next one is due is dropped.
   */
  renderFrame(request: FrameRequest): Uint8Array | Promise<Uint8Array>;
  /** Releases the session's resources. */
  close(): void;
}

/** A renderer shared by every session of the process. */
export interface Renderer {
  /** Output format of every frame. */
  readonly format: VideoFormat;
  /** Opens the rendering of one session for a catalog avatar and background (ids already validated). */
  open(options: { avatarId: string; bgId: string; seed: number }): RenderSession;
  /**
   * Makes a project avatar openable under `avatarId` (rasterises its layers once; a no-op when it already
   * is). A renderer without it renders stock avatars only.
   */
  prepare?(avatarId: string, layers: AvatarLayers): Promise<void>;
  /** Releases a prepared project avatar (no session runs it any more). */
  forget?(avatarId: string): void;
}
