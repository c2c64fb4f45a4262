/**
 * The lip-sync front end and the resamplers, JavaScript beside WebAssembly, in one run:
 * `deno run -A bench/lipsync_frontend.ts [--seconds 10] [--reps 15]`.
 *
 * Per second of a talking session's audio (speech-like sound: voiced, syllable-rate loudness, noise), fed
 * in 20 ms chunks as an engine sends it, the CPU time of:
 * - the front end (resampling to 16 kHz, pre-emphasis, log-mel frames) at 16, 24 and 48 kHz:
 *   {@link JsFrontEnd} (StreamResampler + MelAnalyser) beside {@link WasmFrontEnd};
 * - the whole streaming classifier at 24 kHz (front end, normalisation, projection, the MLP): JavaScript
 *   (`useJs`) beside WebAssembly;
 * - the playout resampler 24 → 48 kHz: the general interpolation loop beside the integer path.
 *
 * The variants alternate within each repetition (the machine may be shared: the least disturbed
 * repetition, the minimum, is the best estimate; the median is given too). Single-threaded, timed with
 * `performance.now()`.
 *
 * @module
 */
import { speechLike } from "../testing/speech_like.ts";
import { parseArgs } from "node:util";
import { StreamingClassifier } from "../src/media/lipsync/classifier.ts";
import { JsFrontEnd, WasmFrontEnd } from "../src/media/lipsync/frontend.ts";
import { LinearResampler } from "../src/media/resample.ts";

const args = parseArgs({
  args: Deno.args,
  options: { seconds: { type: "string", default: "10" }, reps: { type: "string", default: "15" } },
}).values;
const seconds = Number(args.seconds), reps = Number(args.reps);
if (!(seconds > 0 && seconds <= 120)) throw new Error("--seconds: 1..120");
if (!(Number.isInteger(reps) && reps >= 3 && reps <= 200)) throw new Error("--reps: 3..200");

/** Feeds a stream in 20 ms chunks. */
function chunks(pcm: Int16Array, rate: number, take: (chunk: Int16Array) => void): void {
  const n = rate / 50;
  for (let at = 0; at < pcm.length; at += n) take(pcm.subarray(at, at + n));
}

interface Case {
  group: string;
  variant: string;
  run: () => void;
  ms: number[];
}
const cases: Case[] = [];
const add = (group: string, variant: string, run: () => void) => cases.push({ group, variant, run, ms: [] });
const none = () => {};

for (const rate of [16000, 24000, 48000]) {
  const pcm = speechLike(rate, seconds);
  add(`front end ${rate / 1000} kHz`, "JavaScript", () => {
    const f = new JsFrontEnd(rate);
    chunks(pcm, rate, (c) => f.push(c, none));
  });
  add(`front end ${rate / 1000} kHz`, "WebAssembly", () => {
    const f = new WasmFrontEnd(rate);
    chunks(pcm, rate, (c) => f.push(c, none));
  });
}
const at24 = speechLike(24000, seconds);
for (const useJs of [true, false]) {
  add("classifier 24 kHz", useJs ? "JavaScript" : "WebAssembly", () => {
    const c = new StreamingClassifier(24000, undefined, undefined, useJs);
    chunks(at24, 24000, (x) => c.push(x, none));
    c.end(none);
  });
}
for (const generic of [true, false]) {
  add("resampler 24 → 48 kHz", generic ? "general loop" : "integer path", () => {
    const r = new LinearResampler(24000, 48000, { generic });
    chunks(at24, 24000, (x) => r.process(x));
  });
}

for (const c of cases) c.run(); // warm-up (JIT, tables, the WebAssembly instances)
for (let rep = 0; rep < reps; rep++) {
  for (const c of cases) {
    const t0 = performance.now();
    c.run();
    c.ms.push(performance.now() - t0);
  }
}

const pct = (ms: number) => `${(ms / seconds / 10).toFixed(4)} %`;
console.log(
  `# lip-sync front end and resamplers (${new Date().toISOString()}, load ${Deno.loadavg().join(" ")})`,
);
console.log(`${seconds} s of audio a pass, ${reps} passes; % of one core per second of a talking session`);
console.log("");
console.log("| stage | variant | µs per s of audio (min / median) | % of a core (min) | speed-up (min) |");
console.log("|---|---|---|---|---|");
for (const c of cases) {
  c.ms.sort((a, b) => a - b);
  const min = c.ms[0], med = c.ms[Math.floor(c.ms.length / 2)];
  const ref = cases.find((x) => x.group === c.group)!;
  const speedup = ref === c ? "" : `${(ref.ms[0] / min).toFixed(1)}×`;
  console.log(
    `| ${c.group} | ${c.variant} | ${(min * 1000 / seconds).toFixed(0)} / ${
      (med * 1000 / seconds).toFixed(0)
    } | ${pct(min)} | ${speedup} |`,
  );
}
