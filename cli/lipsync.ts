/**
 * `deno task lipsync`: the visemes of a recording, computed by the same streaming engine a live session
 * runs (20 ms chunks, words handed over no later than their audio, the live 80 ms look-ahead).
 *
 *     deno task lipsync --audio FILE.wav [--text FILE.txt | --words FILE.json] [--lang en] --json
 *
 * `--json` prints one JSON array to stdout: `[{"start_ms":0,"end_ms":40,"viseme":"sil"}, …]`, contiguous,
 * non-overlapping and covering the whole file. Without it, a readable table. Errors go to stderr (exit 2
 * for a usage error, 1 for input that cannot be used).
 *
 * @module
 */
import { parseArgs } from "node:util";
import { parseWav } from "../engine/wav.ts";
import { type WordTiming } from "../src/media/lipsync/viseme_engine.ts";
import { defaultG2p, voiceForLanguage } from "../src/media/lipsync/g2p.ts";
import { lipSyncRecording } from "../src/media/lipsync/offline.ts";

const USAGE =
  `Usage: deno task lipsync --audio FILE.wav [--text FILE.txt | --words FILE.json] [--lang en] [--json]

  --audio FILE.wav   PCM16 WAV, mono (stereo is mixed down), 8000-48000 Hz
  --text FILE.txt    the transcript (UTF-8), without timing
  --words FILE.json  word timings: [{"word":"hello","start_ms":120,"end_ms":410}, ...]
  --lang LANG        language of the speech (en, en-gb, de, fr, es, it, nl, pt, ...); default: guessed
                     from the text, else en
  --json             print one JSON array [{"start_ms":0,"end_ms":40,"viseme":"sil"}, ...]
  --help             this text

Visemes: sil PP FF TH DD kk CH SS nn RR aa E ih oh ou (see docs/lipsync.md).`;

/** A problem with the command line (exit 2) or the input (exit 1). */
class CliError extends Error {
  constructor(message: string, readonly code: number) {
    super(message);
  }
}

function parseWords(text: string): WordTiming[] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new CliError(`--words: not valid JSON (${(err as Error).message})`, 1);
  }
  if (!Array.isArray(value)) throw new CliError("--words: expected a JSON array of words", 1);
  return value.map((w, i) => {
    const ok = w && typeof w === "object" && typeof w.word === "string" && Number.isFinite(w.start_ms) &&
      Number.isFinite(w.end_ms) && w.end_ms >= w.start_ms && w.start_ms >= 0;
    if (!ok) {
      throw new CliError(
        `--words: entry ${i} must be {"word": string, "start_ms": number, "end_ms": number} with 0 <= start_ms <= end_ms`,
        1,
      );
    }
    return { word: w.word, start_ms: Number(w.start_ms), end_ms: Number(w.end_ms) };
  });
}

async function readInput(path: string, what: string): Promise<Uint8Array> {
  try {
    return await Deno.readFile(path);
  } catch (err) {
    throw new CliError(`${what}: cannot read ${path} (${(err as Error).message})`, 1);
  }
}

/** Runs the command; returns the exit code. */
export async function main(args: string[]): Promise<number> {
  let values;
  try {
    values = parseArgs({
      args,
      strict: true,
      options: {
        audio: { type: "string" },
        text: { type: "string" },
        words: { type: "string" },
        lang: { type: "string" },
        json: { type: "boolean", default: false },
        help: { type: "boolean", default: false },
      },
    }).values;
  } catch (err) {
    console.error(`lipsync: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  try {
    if (!values.audio) throw new CliError("--audio FILE.wav is required", 2);
    if (values.text && values.words) throw new CliError("give either --text or --words, not both", 2);
    if (values.lang && !voiceForLanguage(values.lang)) {
      throw new CliError(`--lang ${values.lang}: unsupported language (try en, de, fr, es, it, nl, pt)`, 2);
    }
    let wav;
    try {
      wav = parseWav(await readInput(values.audio, "--audio"));
    } catch (err) {
      if (err instanceof CliError) throw err;
      throw new CliError(`--audio: ${(err as Error).message} (expected a PCM16 WAV file)`, 1);
    }
    if (wav.sampleRate < 8000 || wav.sampleRate > 48000) {
      throw new CliError(`--audio: sample rate ${wav.sampleRate} Hz is outside 8000-48000 Hz`, 1);
    }
    const text = values.text
      ? new TextDecoder("utf-8", { fatal: false }).decode(await readInput(values.text, "--text"))
      : undefined;
    const words = values.words
      ? parseWords(new TextDecoder().decode(await readInput(values.words, "--words")))
      : undefined;
    const g2p = (text !== undefined || words !== undefined) ? defaultG2p() : null;
    if ((text !== undefined || words !== undefined) && !g2p) {
      console.error(
        "lipsync: libespeak-ng is not available (apt-get install espeak-ng); using the audio alone",
      );
    }
    const result = lipSyncRecording({
      samples: wav.samples,
      sampleRate: wav.sampleRate,
      text,
      words,
      lang: values.lang,
      g2p,
    });
    if (values.json) {
      console.log(JSON.stringify(result.spans));
    } else {
      console.log(
        `source: ${result.source}, ${result.spans.length} spans, look-ahead ${
          Math.round(result.maxLookaheadMs)
        } ms`,
      );
      for (const s of result.spans) {
        console.log(`${String(s.start_ms).padStart(8)} ${String(s.end_ms).padStart(8)}  ${s.viseme}`);
      }
    }
    return 0;
  } catch (err) {
    if (err instanceof CliError) {
      console.error(`lipsync: ${err.message}`);
      return err.code;
    }
    throw err;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
