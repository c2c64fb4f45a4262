/**
 * The benches' tap at the sound device, outside the browser: what a browser plays to a PulseAudio null sink
 * (`testing/firefox.ts`'s `startSoundServer`), recorded from the sink's monitor by `parec` in the bench's own
 * process, and each onset (a sample above −40 dBFS after 150 ms of quiet — the page tap's rule,
 * `bench/onset_tap.ts`) timed on the bench's clock (epoch ms) when the sound server took it from the browser.
 *
 * The page's tap times a sound by the browser's own account of its output (`getOutputTimestamp()`), and over
 * WebRTC it hears the received stream through a path of its own that the element's sound does not take; this
 * tap hears what the browser gave the device, whichever path made it. It does not count a sound card's own
 * buffer after the server (a null sink has none).
 *
 * The sink's monitor delivers its samples in pieces of 1–2 ms, each a little after the server took them: a
 * sample's time is a piece's arrival less the audio after it, the least of those over the second after it
 * ({@link DeviceClock}; the server's clock and the bench's drift apart by ~0.2 ms a second, measured).
 *
 * @module
 */
import type { SoundServer } from "../testing/firefox.ts";

/** The recording's rate (Hz), mono. */
export const DEVICE_RATE = 48_000;
/** An onset: a sample above this (−40 dBFS) … */
const LOUD = 0.01;
/** … after this much quiet (s). */
const QUIET_S = 0.15;
/** The clock's buckets (ms of the bench's clock), and how far after a sample's piece they are taken from. */
const BUCKET_MS = 100;
const NEAR_MS = 1000;

/**
 * Finds onsets in a stream of samples (the page tap's rule): a sample above −40 dBFS after 150 ms of quiet.
 * Feed it the stream in pieces; it returns each onset's sample index in the whole stream.
 */
export class OnsetDetector {
  #quiet = 0;
  #index = 0;
  constructor(readonly rate: number) {}
  /** The onsets in `samples` (−1 … 1), as indexes from the stream's start. */
  push(samples: ArrayLike<number>): number[] {
    const found: number[] = [];
    const need = this.rate * QUIET_S;
    for (let i = 0; i < samples.length; i++) {
      const loud = Math.abs(samples[i]) > LOUD;
      if (loud && this.#quiet >= need) found.push(this.#index + i);
      this.#quiet = loud ? 0 : this.#quiet + 1;
    }
    this.#index += samples.length;
    return found;
  }
}

/**
 * Maps a recorded stream's sample indexes to the bench's clock: each piece that arrives at `at` (epoch ms)
 * with the stream `total` samples long puts sample 0 no later than `at − total / rate`. A sample's time is
 * taken from the least of those over the {@link NEAR_MS} from the piece that brought it, by
 * {@link BUCKET_MS}: a piece delivered late only raises its own, and where the recording has a gap (the sink
 * took nothing while no stream played to it) the pieces after it put sample 0 later, which the least leaves
 * out for the samples before the gap and cannot reach for those after it.
 */
export class DeviceClock {
  #starts: number[] = []; // each bucket's start (epoch ms)
  #origins: number[] = []; // its least `at − total / rate`
  #totals: number[] = []; // the stream's length at its last piece
  constructor(readonly rate: number) {}
  /** A piece arrived at `at` (epoch ms); the stream is now `total` samples long. */
  arrived(at: number, total: number): void {
    const origin = at - total / this.rate * 1000;
    const start = Math.floor(at / BUCKET_MS) * BUCKET_MS;
    const last = this.#starts.length - 1;
    if (last >= 0 && this.#starts[last] === start) {
      this.#origins[last] = Math.min(this.#origins[last], origin);
      this.#totals[last] = total;
      return;
    }
    this.#starts.push(start);
    this.#origins.push(origin);
    this.#totals.push(total);
  }
  /** Epoch ms of sample `index`, or null when no piece has brought it yet. */
  time(index: number): number | null {
    // The bucket of the piece that brought it: the first whose stream reached past it.
    let lo = 0, hi = this.#totals.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.#totals[mid] > index) hi = mid;
      else lo = mid + 1;
    }
    if (lo === this.#totals.length) return null;
    let origin = Infinity;
    for (let b = lo; b < this.#starts.length && this.#starts[b] <= this.#starts[lo] + NEAR_MS; b++) {
      origin = Math.min(origin, this.#origins[b]);
    }
    return origin + index / this.rate * 1000;
  }
}

/** A recording of the sink's monitor, and the onsets found in it so far. */
export interface DeviceTap {
  /** Onsets heard at the device (epoch ms), in order. */
  onsets(): number[];
  stop(): Promise<void>;
}

/** `parec` recording the null sink's monitor: 48 kHz, mono, 16-bit, in pieces of ~2 ms. */
function record(sound: SoundServer): Deno.ChildProcess {
  return new Deno.Command("parec", {
    args: [
      "-d",
      "null.monitor",
      "--format=s16le",
      `--rate=${DEVICE_RATE}`,
      "--channels=1",
      "--latency-msec=2",
      "--raw",
    ],
    env: sound.env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

/** Starts recording `sound`'s null sink (`parec`, Debian's `pulseaudio-utils`). */
export function startDeviceTap(sound: SoundServer): DeviceTap {
  let child: Deno.ChildProcess;
  try {
    child = record(sound);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) {
      throw new Error("--device records the sound server with parec: apt-get install -y pulseaudio-utils");
    }
    throw err;
  }
  const detector = new OnsetDetector(DEVICE_RATE);
  const clock = new DeviceClock(DEVICE_RATE);
  const found: number[] = [];
  const stderr = new Response(child.stderr).text();
  const reading = (async () => {
    let total = 0;
    let odd: number | null = null; // a byte of a sample split between pieces
    for await (const piece of child.stdout) {
      const at = performance.timeOrigin + performance.now();
      let bytes = piece;
      if (odd !== null) {
        bytes = new Uint8Array(piece.length + 1);
        bytes[0] = odd;
        bytes.set(piece, 1);
      }
      const n = bytes.length >> 1;
      odd = bytes.length & 1 ? bytes[bytes.length - 1] : null;
      const view = new DataView(bytes.buffer, bytes.byteOffset, n * 2);
      const samples = new Float32Array(n);
      for (let i = 0; i < n; i++) samples[i] = view.getInt16(i * 2, true) / 32768;
      found.push(...detector.push(samples));
      total += n;
      clock.arrived(at, total);
    }
  })();
  return {
    onsets: () => found.map((i) => clock.time(i)).filter((t): t is number => t !== null),
    async stop() {
      try {
        child.kill("SIGTERM");
      } catch { /* exited */ }
      await child.status;
      await reading.catch(() => {});
      await stderr;
    },
  };
}
