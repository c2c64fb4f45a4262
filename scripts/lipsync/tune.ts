/**
 * Chooses the viseme engine's decoding settings on the `tune` espeak-ng voices (never the bench's voices,
 * never Festival's): generates clean utterances in English, German and French, then scores settings
 * given on the command line (or the defaults) for each source.
 *
 *     nice -n 10 deno run -A scripts/lipsync/tune.ts --count 60 [--set acoustics.priorWeight=0.5 …]
 *
 * @module
 */
import { parseArgs } from "node:util";
import { EspeakLib } from "../../src/speech/espeak_lib.ts";
import {
  espeakUtterance,
  randomSentence,
  randomVoice,
  rng,
  type Utterance,
} from "../../bench/lipsync/corpus.ts";
import { evaluateAll, type Method } from "../../bench/lipsync/evaluate.ts";
import { ratios } from "../../bench/lipsync/score.ts";
import { defaultAlignerSettings } from "../../src/media/lipsync/aligner.ts";
import { defaultAcoustics } from "../../src/media/lipsync/decoder.ts";
import { type Viseme, VISEME_INDEX } from "../../src/media/lipsync/visemes.ts";

/** Clean utterances of the tune voices. */
export function tuneUtterances(count: number, seed = 99): Utterance[] {
  const lib = EspeakLib.open();
  const r = rng(seed);
  const out: Utterance[] = [];
  for (let i = 0; i < count; i++) {
    const lang = ["en", "en", "de", "fr"][i % 4];
    const voice = randomVoice("tune", lang, r);
    out.push(espeakUtterance(lib, `tune-${i}`, randomSentence(lang, r), voice, lang));
  }
  return out;
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      count: { type: "string", default: "60" },
      set: { type: "string", multiple: true, default: [] },
      methods: { type: "string", default: "audio,text,words" },
    },
  });
  const utts = tuneUtterances(Number(values.count));
  for (const variant of values.set!.length ? values.set! : [""]) {
    const acoustics = defaultAcoustics();
    const aligner = defaultAlignerSettings();
    for (const kv of variant.split(",").filter(Boolean)) {
      const [path, value] = kv.split("=");
      const [group, key] = path.split(".");
      if (group === "acoustics" && key.startsWith("bias")) {
        acoustics.bias[VISEME_INDEX[key.slice(4) as Viseme]] = Number(value);
      } else if (group === "acoustics") (acoustics as unknown as Record<string, number>)[key] = Number(value);
      else (aligner as unknown as Record<string, number>)[key] = Number(value);
    }
    const cells: string[] = [];
    for (const m of values.methods!.split(",") as Method[]) {
      const t0 = performance.now();
      const r = ratios(evaluateAll(utts, m, { acoustics, aligner }));
      cells.push(
        `${m}: ${r.acc7.toFixed(3)} rec ${r.recall.toFixed(2)} prec ${r.precision.toFixed(2)} (${
          ((performance.now() - t0) / 1000).toFixed(1)
        }s)`,
      );
    }
    console.log(`${variant || "defaults"} | ${cells.join(" | ")}`);
  }
}
