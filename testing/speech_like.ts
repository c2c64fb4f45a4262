/**
 * A speech-like test sound (no voice needed): voiced at 130 Hz with a 900 Hz formant, loudness at a syllable
 * rate (2.5 Hz, silent half the time), and a burst of fricative noise in the last fifth of every second. A
 * fixed seed: the same samples every run. The lip-sync kernel tests and `bench/lipsync_frontend.ts` feed it.
 *
 * @module
 */

/** `seconds` of the sound at `rate` (PCM16). */
export function speechLike(rate: number, seconds: number): Int16Array {
  const pcm = new Int16Array(Math.round(rate * seconds));
  let seed = 7;
  const noise = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31 - 0.5);
  for (let i = 0; i < pcm.length; i++) {
    const t = i / rate;
    const env = Math.max(0, Math.sin(2 * Math.PI * 2.5 * t));
    pcm[i] = Math.round(
      env * (5000 * Math.sin(2 * Math.PI * 130 * t) + 2500 * Math.sin(2 * Math.PI * 900 * t)) +
        (t % 1 > 0.8 ? 3000 * noise() : 0),
    );
  }
  return pcm;
}
