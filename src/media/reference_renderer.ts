/**
 * The reference renderer: the catalog's avatars (rasterised once) composited over their background, the
 * face each frame asks for (`FaceState`: viseme weights drawn as a blended mouth pose, blinks, looks,
 * head motion). A frame is a cached "base" (background, body, head, eyes at a head offset) with the
 * mouth's small box recomposited and converted to yuv420p; frames of a face at rest are kept in a shared
 * {@link FrameCache}, so a quiet face mostly costs a lookup.
 *
 * @module
 */
import type { EyeState, Look } from "./art/avatars.ts";
import { blendPose, poseKey, quantisePose, VISEME_POSES } from "./art/mouth.ts";
import { type ArtBank, type AvatarArt, loadAvatarArt } from "./art_bank.ts";
import type { AvatarLayers } from "./art/layers.ts";
import { FrameCache } from "./frame_cache.ts";
import { FaceAnimator, type FaceState, silentVisemes } from "./motion.ts";
import type { FrameRequest, Renderer, RenderSession, VideoFormat } from "./renderer.ts";
import { blendSprite, rgbaRegionToI420, rgbaToI420 } from "./yuv.ts";

/** Bases kept per renderer (head offset × eyes × look, per avatar and background). */
const BASE_CACHE = 96;
/** The pose key of the mouth at rest. */
const REST_KEY = poseKey(quantisePose(VISEME_POSES.sil));

interface Base {
  i420: Uint8Array;
  /** The RGBA of the mouth box (without a mouth). */
  box: Uint8Array;
}

/** The sprite renderer over an {@link ArtBank}. */
export class ReferenceRenderer implements Renderer {
  readonly format: VideoFormat;
  readonly #bases = new Map<string, Base>();
  #region = new Uint8Array(0);

  constructor(readonly art: ArtBank, fps: number, readonly cache: FrameCache) {
    this.format = { width: art.width, height: art.height, fps };
  }

  async prepare(avatarId: string, layers: AvatarLayers): Promise<void> {
    if (this.art.avatars.has(avatarId)) return;
    const art = await loadAvatarArt(layers, this.art.width, this.art.height);
    this.art.avatars.set(avatarId, art);
  }

  forget(avatarId: string): void {
    this.art.avatars.delete(avatarId);
    for (const key of this.#bases.keys()) if (key.startsWith(`${avatarId}/`)) this.#bases.delete(key);
  }

  open(options: { avatarId: string; bgId: string; seed: number }): RenderSession {
    const avatar = this.art.avatars.get(options.avatarId);
    const bg = this.art.backgrounds.get(options.bgId);
    if (!avatar || !bg) throw new Error("avatar or background missing from the art bank");
    const prefix = `${options.avatarId}/${options.bgId}`;
    // Without a face from the session (a caller that only has audio), the renderer animates one itself.
    const own = new FaceAnimator(options.seed);
    const silent = silentVisemes();
    return {
      renderFrame: (req: FrameRequest) => {
        const face = req.face ??
          own.at(req.timeMs, { visemes: silent, mode: req.speaking ? "speaking" : "idle" });
        return this.#frame(prefix, avatar, bg, face, req.into);
      },
      close: () => {},
    };
  }

  /** The frame of a face: cached at rest, else composed (into `into` when the caller gives one). */
  #frame(prefix: string, avatar: AvatarArt, bg: Uint8Array, face: FaceState, into?: Uint8Array): Uint8Array {
    const { width } = this.art;
    const s = width / 512;
    const dx = Math.round(face.headDx * s), dy = Math.round(face.headDy * s);
    const pose = quantisePose(blendPose(face.visemes));
    const baseKey = `${prefix}/${dx}/${dy}/${face.eyes}/${face.look}`;
    const key = poseKey(pose);
    const compose = (dest?: Uint8Array) => {
      const base = this.#base(baseKey, avatar, bg, dx, dy, face.eyes, face.look);
      const box = avatar.mouthBox;
      // The mouth's box, composed in a scratch buffer (read before this returns; one per renderer).
      if (this.#region.length !== base.box.length) this.#region = new Uint8Array(base.box.length);
      const region = this.#region;
      region.set(base.box);
      const mouth = avatar.mouth(pose);
      // The mouth sprite covers the box exactly; it moves with the head.
      blendSprite(region, box.width, box.height, { ...mouth, x: dx, y: dy });
      let out: Uint8Array;
      if (dest?.length === base.i420.length) (out = dest).set(base.i420);
      else out = base.i420.slice();
      rgbaRegionToI420(region, box.width, box.height, out, width, this.art.height, box.x, box.y);
      return out;
    };
    // A face at rest repeats (idle, listening, thinking): cached. A talking mouth rarely repeats exactly
    // (blended poses × head offsets × blinks): composed each time from the cached base, which is cheap,
    // instead of filling the shared cache with frames seen once, and written into the caller's buffer when
    // it gives one. A cached frame is never built there: the cache keeps what it is given.
    if (key !== REST_KEY) return compose(into);
    return this.cache.get(`${baseKey}/${key}`, () => compose());
  }

  #base(
    key: string,
    avatar: AvatarArt,
    bg: Uint8Array,
    dx: number,
    dy: number,
    eyes: EyeState,
    look: Look,
  ): Base {
    const hit = this.#bases.get(key);
    if (hit) {
      this.#bases.delete(key);
      this.#bases.set(key, hit);
      return hit;
    }
    const { width, height } = this.art;
    const rgba = bg.slice();
    blendSprite(rgba, width, height, avatar.body);
    blendSprite(rgba, width, height, avatar.head, dx, dy);
    blendSprite(rgba, width, height, avatar.eyes[eyes][look], dx, dy);
    const b = avatar.mouthBox;
    const box = new Uint8Array(b.width * b.height * 4);
    for (let y = 0; y < b.height; y++) {
      box.set(
        rgba.subarray(((b.y + y) * width + b.x) * 4, ((b.y + y) * width + b.x + b.width) * 4),
        y * b.width * 4,
      );
    }
    const base = { i420: rgbaToI420(rgba, width, height), box };
    this.#bases.set(key, base);
    if (this.#bases.size > BASE_CACHE) this.#bases.delete(this.#bases.keys().next().value!);
    return base;
  }
}
