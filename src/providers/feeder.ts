/**
 * Keeps a vendor fed with audio while the user's microphone sends none, without ever touching the user's
 * speech.
 *
 * Why feed at all: the vendors time their voice detection and turn-taking by the audio they receive, and
 * close a socket that receives none for a while. vendor2 (Cartesia Managed Agents, AsyncAPI `2026-08-14`)
 * asks for `audio_input` "continuously (e.g. every 20–100 ms)", and a third party reports an idle close
 * after 120 s; vendor3 (ElevenLabs Agents) ends a conversation with `transport_receive_timeout` (close
 * 1002) after 60 s without user input. But the service only has microphone audio while a client holds the
 * microphone (a viewer without one, a muted page, nobody connected yet).
 *
 * What is fed: the feeder keeps an audio clock, the milliseconds of audio the vendor has been sent (the
 * user's and its own silence) against the time since the connection started. Microphone frames arrive as
 * they were captured, 10–100 ms each, late or early by the network's jitter; a TCP retransmission or a Wi-Fi
 * hiccup holds them back for a few hundred milliseconds and then delivers them at once. None of that is a
 * pause the user made, so nothing is added while frames keep coming. Only when no microphone audio has
 * gone out for {@link SILENCE_GAP_MS} does the feeder fill the clock's deficit with silence (the gap the
 * user really left, at once, so the vendor's end-of-turn detection sees it), then keep it filled with
 * {@link SILENCE_CHUNK_MS} chunks every {@link SILENCE_CHUNK_MS} until the microphone is back.
 *
 * The gap threshold: 500 ms is above every pause between frames that is not the user's (a 100 ms frame
 * with ±15 ms of jitter arrives at most 115 ms after the previous one; one lost packet stalls TCP for its
 * 200 ms minimum retransmission timeout plus a round trip, ~250–350 ms between frames), and far below what
 * the vendors need (60 s and 120 s of silence before a close; chunks every 100 ms once feeding). Its cost:
 * when a microphone stops in the middle of a turn (a muted page), the vendor hears the end of the turn
 * 500 ms late.
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import { every } from "./wire/wait.ts";

/** No microphone audio for this long is a real gap, which the feeder fills with silence. */
export const SILENCE_GAP_MS = 500;
/** Period of the feeder's check, and the largest silence chunk it sends. */
export const SILENCE_CHUNK_MS = 100;
/**
 * How far the audio clock may run behind (a debt the feeder would pay in one burst) or ahead (microphone
 * audio sent faster than real time) before the difference is forgotten: the vendor gets neither a burst of
 * more than this much silence nor a wall-clock pause longer than this once the microphone stops.
 */
export const MAX_CLOCK_SKEW_MS = 1000;

/** Sends silence whenever the microphone left a real gap. */
export class SilenceFeeder {
  readonly #clock: Clock;
  readonly #send: (ms: number) => void;
  readonly #gapMs: number;
  /** Clock time the audio clock counts from. */
  #origin: number;
  /** Milliseconds of audio sent (microphone and silence). */
  #sentMs = 0;
  /** When microphone audio last went out (-Infinity: never). */
  #lastMicAt = -Infinity;

  /**
   * Starts feeding (every {@link SILENCE_CHUNK_MS} of `clock` until `signal` aborts). `sendSilence(ms)`
   * sends `ms` milliseconds of silence in the vendor's format.
   */
  constructor(
    clock: Clock,
    signal: AbortSignal,
    sendSilence: (ms: number) => void,
    options: { gapMs?: number } = {},
  ) {
    this.#clock = clock;
    this.#send = sendSilence;
    this.#gapMs = options.gapMs ?? SILENCE_GAP_MS;
    this.#origin = clock.now();
    every(clock, SILENCE_CHUNK_MS, signal, () => this.tick());
  }

  /** `ms` milliseconds of the user's audio went out (or were offered: a congested socket drops them). */
  fed(ms: number): void {
    this.#lastMicAt = this.#clock.now();
    this.#sentMs += ms;
  }

  /** One check (the feeder's timer calls it; tests driving a clock by hand may too). */
  tick(): void {
    const now = this.#clock.now();
    let deficit = now - this.#origin - this.#sentMs;
    // Forget a debt or a lead beyond the bound (the origin moves instead).
    if (deficit > MAX_CLOCK_SKEW_MS) {
      this.#origin += deficit - MAX_CLOCK_SKEW_MS;
      deficit = MAX_CLOCK_SKEW_MS;
    } else if (deficit < -MAX_CLOCK_SKEW_MS) {
      this.#origin += deficit + MAX_CLOCK_SKEW_MS;
      deficit = -MAX_CLOCK_SKEW_MS;
    }
    if (now - this.#lastMicAt < this.#gapMs) return;
    while (deficit >= 1) {
      const ms = Math.min(SILENCE_CHUNK_MS, Math.floor(deficit));
      this.#send(ms);
      this.#sentMs += ms;
      deficit -= ms;
    }
  }
}
