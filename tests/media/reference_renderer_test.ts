import assert from "node:assert/strict";
import { loadArtBank } from "../../src/media/art_bank.ts";
import { blendPose, quantisePose } from "../../src/media/art/mouth.ts";
import { EYE_STATES, LOOKS } from "../../src/media/art/avatars.ts";
import { CATALOG } from "../../src/media/catalog.ts";
import { FrameCache } from "../../src/media/frame_cache.ts";
import { VISEMES } from "../../src/media/lipsync/visemes.ts";
import type { FaceState } from "../../src/media/motion.ts";
import { ReferenceRenderer } from "../../src/media/reference_renderer.ts";
import { blendSprite, rgbaToI420 } from "../../src/media/yuv.ts";

const SIZE = 256;

/** A face: head offset (512 view box), eyes, look, and one viseme (or silence). */
function face(headDx: number, headDy: number, i: number, viseme: string): FaceState {
  const visemes = new Float32Array(VISEMES.length);
  visemes[(VISEMES as readonly string[]).indexOf(viseme)] = 1;
  return {
    visemes,
    eyes: EYE_STATES[i % EYE_STATES.length],
    look: LOOKS[Math.floor(i / EYE_STATES.length) % LOOKS.length],
    headDx,
    headDy,
    mode: viseme === "sil" ? "idle" : "speaking",
  };
}

Deno.test("reference renderer: a frame composed over the head's region only is the whole frame composed, byte for byte", async () => {
  // The base (background, body, head, eyes) is converted again only where the head and eyes are; this
  // checks it against the whole frame composed and converted, as the renderer did before, over head offsets
  // that reach the frame's edges and odd pixels, every eyes × look, a closed and an open mouth.
  const art = await loadArtBank(CATALOG, SIZE, SIZE);
  const renderer = new ReferenceRenderer(art, 25, new FrameCache(0));
  const avatarId = CATALOG.avatars[0].id, bgId = CATALOG.backgrounds[0].id;
  const avatar = art.avatars.get(avatarId)!, bg = art.backgrounds.get(bgId)!;
  const session = renderer.open({ avatarId, bgId, seed: 1 });
  let n = 0;
  for (const [hx, hy] of [[0, 0], [3, -5], [-7, 2], [1, 1], [-1, -1], [40, 30], [-600, 0], [0, 600]]) {
    for (let i = 0; i < 9; i++) {
      for (const viseme of ["sil", "aa"]) {
        const f = face(hx, hy, i, viseme);
        const got = await session.renderFrame({
          index: n,
          timeMs: n * 40,
          audio: new Int16Array(0),
          sampleRate: 48000,
          speaking: viseme !== "sil",
          face: f,
        });
        // The whole frame, as before: background, body, head and eyes at the offset, the mouth in its box.
        const s = SIZE / 512;
        const dx = Math.round(f.headDx * s), dy = Math.round(f.headDy * s);
        const rgba = bg.slice();
        blendSprite(rgba, SIZE, SIZE, avatar.body);
        blendSprite(rgba, SIZE, SIZE, avatar.head, dx, dy);
        blendSprite(rgba, SIZE, SIZE, avatar.eyes[f.eyes][f.look], dx, dy);
        const b = avatar.mouthBox;
        const box = new Uint8Array(b.width * b.height * 4);
        for (let y = 0; y < b.height; y++) {
          box.set(
            rgba.subarray(((b.y + y) * SIZE + b.x) * 4, ((b.y + y) * SIZE + b.x + b.width) * 4),
            y * b.width * 4,
          );
        }
        const mouth = avatar.mouth(quantisePose(blendPose(f.visemes)));
        blendSprite(box, b.width, b.height, { ...mouth, x: dx, y: dy });
        for (let y = 0; y < b.height; y++) {
          rgba.set(box.subarray(y * b.width * 4, (y + 1) * b.width * 4), ((b.y + y) * SIZE + b.x) * 4);
        }
        const want = rgbaToI420(rgba, SIZE, SIZE);
        assert.ok(
          got.length === want.length && got.every((v, k) => v === want[k]),
          `frame of head (${hx}, ${hy}), eyes ${f.eyes}, look ${f.look}, ${viseme} differs`,
        );
        n++;
      }
    }
  }
  session.close();
});
