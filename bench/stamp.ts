/**
 * A renderer for measurements: the reference renderer's frames with the wall clock at render time stamped
 * into their top rows as a barcode (32 black or white blocks, most significant bit first, of
 * `Date.now() >>> 0`), so a page can decode each presented frame's stamp and compute glass-to-glass latency
 * on the same machine clock. Used by `bench/service.ts --stamp`.
 *
 * @module
 */
import type { MediaConfig } from "../src/config.ts";
import { loadArtBank } from "../src/media/art_bank.ts";
import { CATALOG } from "../src/media/catalog.ts";
import { FrameCache } from "../src/media/frame_cache.ts";
import { ReferenceRenderer } from "../src/media/reference_renderer.ts";
import type { FrameRequest, Renderer, RenderSession, VideoFormat } from "../src/media/renderer.ts";

/** Rows of the barcode at the top of each frame. */
export const STAMP_ROWS = 32;
/** Bits of the stamp (blocks across the width). */
export const STAMP_BITS = 32;

/**
 * What the service knew of one frame when it rendered it (diagnosis, {@link StampingRenderer}'s `trace`):
 * [frame index, wall clock when rendered (ms), the face's "aa" weight, its strongest viseme's index, the
 * RMS of each 10 ms quarter of the frame's audio as the service had it then (PCM16 units)].
 */
export type FrameTrace = [number, number, number, number, number[]];

/** Wraps a renderer: each frame is copied (cached frames stay untouched) and stamped with `now()`. */
export class StampingRenderer implements Renderer {
  readonly format: VideoFormat;

  /**
   * @param trace when given, each frame rendered is recorded in it (what its face and audio were at render
   *   time: a mouth drawn closed because its speech had not arrived yet shows here).
   */
  constructor(
    readonly inner: Renderer,
    readonly now: () => number = Date.now,
    readonly trace?: (sessionSeed: number, t: FrameTrace) => void,
  ) {
    this.format = inner.format;
  }

  open(options: { avatarId: string; bgId: string; seed: number }): RenderSession {
    const session = this.inner.open(options);
    return {
      renderFrame: (req: FrameRequest) => {
        if (this.trace) this.trace(options.seed, frameTrace(req, performance.timeOrigin + performance.now()));
        // Stamped in the caller's buffer (the inner renderer's frame copied there unless it was built
        // there), as a renderer should: a copy per frame adds garbage collections the service would not have.
        const stamp = (frame: Uint8Array) =>
          stampFrame(
            frame,
            this.format,
            this.now(),
            req.into?.length === frame.length ? req.into : undefined,
          );
        const frame = session.renderFrame(req);
        return frame instanceof Uint8Array ? stamp(frame) : frame.then(stamp);
      },
      close: () => session.close(),
    };
  }
}

function frameTrace(req: FrameRequest, at: number): FrameTrace {
  const v = req.face?.visemes;
  let top = 0;
  for (let i = 1; v && i < v.length; i++) if (v[i] > v[top]) top = i;
  const q = Math.max(1, Math.floor(req.audio.length / 4));
  const rms: number[] = [];
  for (let p = 0; p < req.audio.length; p += q) {
    let sum = 0;
    const end = Math.min(req.audio.length, p + q);
    for (let i = p; i < end; i++) sum += req.audio[i] * req.audio[i];
    rms.push(Math.round(Math.sqrt(sum / Math.max(1, end - p))));
  }
  const r = (x: number) => Math.round(x * 1000) / 1000;
  return [req.index, Math.round(at * 10) / 10, r(v?.[10] ?? 0), top, rms];
}

/**
 * A copy of a yuv420p frame with `value >>> 0` as a barcode in its top rows (neutral chroma there), made in
 * `into` when given (which may be `frame` itself).
 */
export function stampFrame(
  frame: Uint8Array,
  format: VideoFormat,
  value: number,
  into?: Uint8Array,
): Uint8Array {
  const { width, height } = format;
  let out: Uint8Array;
  if (into === undefined) out = frame.slice();
  else if (into === frame) out = into;
  else (out = into).set(frame);
  const v = value >>> 0;
  const block = width / STAMP_BITS;
  for (let y = 0; y < STAMP_ROWS; y++) {
    for (let x = 0; x < width; x++) {
      const bit = (v >>> (STAMP_BITS - 1 - Math.floor(x / block))) & 1;
      out[y * width + x] = bit ? 235 : 16;
    }
  }
  const cw = width / 2;
  const uOffset = width * height;
  const vOffset = uOffset + cw * (height / 2);
  for (let y = 0; y < STAMP_ROWS / 2; y++) {
    out.fill(128, uOffset + y * cw, uOffset + (y + 1) * cw);
    out.fill(128, vOffset + y * cw, vOffset + (y + 1) * cw);
  }
  return out;
}

/** The reference renderer of the configured size, stamping every frame (and tracing them through `trace`). */
export async function stampingReferenceRenderer(
  config: MediaConfig,
  trace?: (sessionSeed: number, t: FrameTrace) => void,
): Promise<Renderer> {
  const art = await loadArtBank(CATALOG, config.width, config.height);
  return new StampingRenderer(
    new ReferenceRenderer(art, config.fps, new FrameCache(config.frameCacheBytes)),
    Date.now,
    trace,
  );
}
