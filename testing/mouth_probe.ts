/**
 * What the SFU browser tests read of a page: the box the default avatar's mouth is drawn in, the page-side
 * count of the mouth cavity's dark pixels, and the page's probe records (the mouth's darkness and the
 * sound's RMS, each stamped with the page's wall clock) between two instants.
 *
 * @module
 */
import { loadArtBank } from "../src/media/art_bank.ts";
import { CATALOG } from "../src/media/catalog.ts";

/** A page of either browser driver: both evaluate a script given as a string. */
export interface EvaluatingPage {
  evaluate(script: string): Promise<unknown>;
}

/** The box the default avatar's mouth is drawn in (`size` × `size` pictures), head motion included. */
export async function mouthBox(size = 256): Promise<{ x: number; y: number; w: number; h: number }> {
  const art = await loadArtBank(CATALOG, size, size);
  const b = art.avatars.get(CATALOG.defaultAvatarId)!.mouthBox;
  return { x: b.x, y: b.y, w: b.width, h: b.height };
}

/**
 * Page script (an expression): a function of an RGBA pixel array that counts the pixels of the dark mouth
 * cavity (dark red: the open mouth's inside in the stock art).
 */
export const DARK_CAVITY_PIXELS = `((d) => {
  let dark = 0;
  for (let i = 0; i < d.length; i += 4) {
    const r = d[i], g = d[i + 1], b = d[i + 2];
    if (r < 110 && g < 60 && b < 70 && r > g + 15) dark++;
  }
  return dark;
})`;

/**
 * The page's probe records (`globalThis.mouth`: `{ t, dark }`, `globalThis.audio`: `{ t, rms }`) between two
 * wall-clock instants.
 */
export async function probes(
  page: EvaluatingPage,
  from: number,
  to: number,
): Promise<{ mouth: number[]; audio: number[] }> {
  const all = await page.evaluate(`({ mouth: globalThis.mouth, audio: globalThis.audio })`) as {
    mouth: { t: number; dark: number }[];
    audio: { t: number; rms: number }[];
  };
  return {
    mouth: all.mouth.filter((m) => m.t >= from && m.t < to).map((m) => m.dark),
    audio: all.audio.filter((a) => a.t >= from && a.t < to).map((a) => a.rms),
  };
}

/**
 * Page script (an expression): a function of audio tracks that starts hearing them on an `AudioContext` of
 * its own and returns `{ context, rms }`, `rms()` the RMS of the last 20 ms heard (960 samples).
 */
export const SOUND_RMS = `((tracks) => {
  const context = new AudioContext();
  const analyser = context.createAnalyser();
  analyser.fftSize = 1024;
  context.createMediaStreamSource(new MediaStream(tracks)).connect(analyser);
  const buf = new Float32Array(960);
  return {
    context,
    rms: () => {
      analyser.getFloatTimeDomainData(buf);
      let sum = 0;
      for (const x of buf) sum += x * x;
      return Math.sqrt(sum / buf.length);
    },
  };
})`;
