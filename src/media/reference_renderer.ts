/**
 * The reference renderer: the catalog's avatars (rasterised once) composited over their background, the
 * face each frame asks for (`FaceState`: viseme weights drawn as a blended mouth pose, blinks, looks,
 * head motion). A frame is a cached "base" (background, body, head, eyes at a head offset; made over the
 * head's region only, on the background and body converted once) with the mouth's small box recomposited
 * and converted to yuv420p; frames of a face at rest are kept in a shared
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
  /** Per avatar and background: the frame without head and eyes (RGBA and yuv420p), composed once. */
  readonly #unders = new Map<string, { rgba: Uint8Array; i420: Uint8Array }>();
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
    for (const key of this.#unders.keys()) if (key.startsWith(`${avatarId}/`)) this.#unders.delete(key);
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
      const base = this.#base(prefix, baseKey, avatar, bg, dx, dy, face.eyes, face.look);
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
    prefix: string,
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
    const under = this.#under(prefix, avatar, bg);
    // Only the region the head and eyes cover (and the mouth's box) is composed and converted again: outside
    // it the frame is the background and body, converted once (`#under`). Its edges are on even pixels, so
    // every 2×2 block of the colour planes lies wholly inside or outside it: the same bytes as the whole
    // frame composed and converted (a test compares them), at a fraction of the cost.
    const head = avatar.head, eye = avatar.eyes[eyes][look], b = avatar.mouthBox;
    const x0 = Math.max(0, Math.min(head.x + dx, eye.x + dx, b.x)) & ~1;
    const y0 = Math.max(0, Math.min(head.y + dy, eye.y + dy, b.y)) & ~1;
    const x1 = Math.min(
      width,
      (Math.max(head.x + dx + head.width, eye.x + dx + eye.width, b.x + b.width) + 1) & ~1,
    );
    const y1 = Math.min(
      height,
      (Math.max(head.y + dy + head.height, eye.y + dy + eye.height, b.y + b.height) + 1) & ~1,
    );
    const w = x1 - x0, h = y1 - y0;
    const rgba = new Uint8Array(w * h * 4);
    for (let y = 0; y < h; y++) {
      rgba.set(under.rgba.subarray(((y0 + y) * width + x0) * 4, ((y0 + y) * width + x1) * 4), y * w * 4);
    }
    blendSprite(rgba, w, h, head, dx - x0, dy - y0);
    blendSprite(rgba, w, h, eye, dx - x0, dy - y0);
    const box = new Uint8Array(b.width * b.height * 4);
    for (let y = 0; y < b.height; y++) {
      const at = ((b.y - y0 + y) * w + b.x - x0) * 4;
      box.set(rgba.subarray(at, at + b.width * 4), y * b.width * 4);
    }
    const i420 = under.i420.slice();
    rgbaRegionToI420(rgba, w, h, i420, width, height, x0, y0);
    const base = { i420, box };
    this.#bases.set(key, base);
    if (this.#bases.size > BASE_CACHE) this.#bases.delete(this.#bases.keys().next().value!);
    return base;
  }

  /**
   * The frame of avatar and background `prefix` without head and eyes: background and body (one per pair in
   * use, 1.4 MB at 512×512; a project avatar's go with it, {@link ReferenceRenderer.forget}).
   */
  #under(prefix: string, avatar: AvatarArt, bg: Uint8Array): { rgba: Uint8Array; i420: Uint8Array } {
    const hit = this.#unders.get(prefix);
    if (hit) return hit;
    const { width, height } = this.art;
    const rgba = bg.slice();
    blendSprite(rgba, width, height, avatar.body);
    const under = { rgba, i420: rgbaToI420(rgba, width, height) };
    this.#unders.set(prefix, under);
    return under;
  }
}
