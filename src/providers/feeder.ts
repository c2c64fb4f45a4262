/**
 * Keeps a vendor fed with audio while nobody talks: some vendors close a socket that receives no audio for a
 * while (and their voice detection expects a continuous stream), but the service only has microphone audio
 * while a client holds the microphone. Every tick without user audio, a tick's worth of silence goes out.
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import { every } from "./wire/wait.ts";

/** Period of the silence check (and the length of one silence chunk). */
export const SILENCE_TICK_MS = 100;

/** Sends silence whenever no user audio went out during a tick. */
export class SilenceFeeder {
  #fed = false;

  constructor(clock: Clock, signal: AbortSignal, sendSilence: (ms: number) => void) {
    every(clock, SILENCE_TICK_MS, signal, () => {
      if (!this.#fed) sendSilence(SILENCE_TICK_MS);
      this.#fed = false;
    });
  }

  /** User audio went out. */
  fed(): void {
    this.#fed = true;
  }
}
