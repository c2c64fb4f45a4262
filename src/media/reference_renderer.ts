/**
 * The reference renderer: the catalog's avatars (rasterised once) composited over their background, the
 * mouth following the audio's energy, with blinks and a slow head bob. Frames are composited in RGBA,
 * converted to yuv420p once and kept in a shared {@link FrameCache}, so a steady session mostly costs a
 * cache lookup per frame.
 *
 * @module
 */
import type { EyeState, MouthShape } from "./art/avatars.ts";
import type { ArtBank } from "./art_bank.ts";
import { FrameCache } from "./frame_cache.ts";
import { analyse, LipSync } from "./lipsync.ts";
import { Blinker, headOffset } from "./motion.ts";
import type { FrameRequest, Renderer, RenderSession, VideoFormat } from "./renderer.ts";
import { blendSprite, rgbaToI420 } from "./yuv.ts";

/** The sprite renderer over an {@link ArtBank}. */
export class ReferenceRenderer implements Renderer {
  readonly format: VideoFormat;
  /** Amplitude of the head bob in pixels (2 px at 512 px height). */
  readonly bob: number;

  constructor(readonly art: ArtBank, fps: number, readonly cache: FrameCache) {
    this.format = { width: art.width, height: art.height, fps };
    this.bob = Math.max(1, Math.round(2 * art.height / 512));
  }

  open(options: { avatarId: string; bgId: string; seed: number }): RenderSession {
    const avatar = this.art.avatars.get(options.avatarId);
    const bg = this.art.backgrounds.get(options.bgId);
    if (!avatar || !bg) throw new Error("avatar or background missing from the art bank");
    const { width, height } = this.art;
    const blinker = new Blinker(options.seed);
    const lips = new LipSync();
    const phase = (options.seed % 628) / 100;
    const prefix = `${options.avatarId}/${options.bgId}`;
    const compose = (dy: number, eyes: EyeState, mouth: MouthShape) => () => {
      const rgba = bg.slice();
      blendSprite(rgba, width, height, avatar.body);
      blendSprite(rgba, width, height, avatar.head, 0, dy);
      blendSprite(rgba, width, height, avatar.eyes[eyes], 0, dy);
      blendSprite(rgba, width, height, avatar.mouths[mouth], 0, dy);
      return rgbaToI420(rgba, width, height);
    };
    return {
      renderFrame: (req: FrameRequest) => {
        const mouth = lips.next(analyse(req.audio, req.sampleRate));
        const eyes = blinker.at(req.timeMs);
        const dy = headOffset(req.timeMs, this.bob, req.speaking, phase);
        return this.cache.get(`${prefix}/${dy}/${eyes}/${mouth}`, compose(dy, eyes, mouth));
      },
      close: () => {},
    };
  }
}
