/**
 * Speech with known phoneme timelines, for training the audio classifier and for scoring lip sync:
 * espeak-ng (in process, its phoneme events are the timeline) and Festival (held out: scoring only; its
 * segment relation is the timeline). Also the text it speaks and the voice splits.
 *
 * Voice splits (espeak-ng variants): `train` voices train the classifier, `tune` voices choose its
 * settings, `bench` voices are never used for either (the bench's espeak corpus). Festival's voices are
 * used by nothing but the final scoring.
 *
 * @module
 */
import { type EspeakLib, type EspeakVoiceOptions, speechTimings } from "../../src/speech/espeak_lib.ts";
import { parseWav } from "../../engine/wav.ts";
import { phonemeVisemes, VISEME_INDEX, type VisemePart } from "../../src/media/lipsync/visemes.ts";
import { prng } from "../../src/media/motion.ts";

/** One phoneme of a timeline. */
export interface Segment {
  startMs: number;
  endMs: number;
  /** The phoneme (IPA or Festival's name); "" for a pause. */
  phoneme: string;
  parts: VisemePart[];
}

/** One word with its span. */
export interface TimedWord {
  word: string;
  start_ms: number;
  end_ms: number;
}

/** An utterance with its truth. */
export interface Utterance {
  id: string;
  lang: string;
  voice: string;
  text: string;
  samples: Int16Array;
  sampleRate: number;
  segments: Segment[];
  words: TimedWord[];
}

/** A small deterministic PRNG (mulberry32, the one the avatars' motion uses). */
export const rng = prng;

const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];

/** espeak-ng variants by split (`train`, `tune`, `bench`). */
export const VARIANT_SPLITS = {
  train: [
    "",
    "m1",
    "m2",
    "m3",
    "m4",
    "m6",
    "m7",
    "f1",
    "f2",
    "f4",
    "klatt",
    "klatt3",
    "klatt5",
    "Andy",
    "Annie",
    "aunty",
    "belinda",
    "boris",
    "david",
    "edward",
    "iven2",
    "john",
    "linda",
    "max",
    "norbert",
    "paul",
    "quincy",
    "rob",
    "steph",
    "travis",
    "victor",
    "croak",
    "robosoft",
    "whisper",
  ],
  tune: ["m5", "f3", "klatt2", "Denis", "Gene", "Lee", "Mario", "iven", "anika", "robert"],
  bench: ["m8", "f5", "klatt4", "klatt6", "Michael", "adam", "caleb", "ed", "grandma", "shelby", "michel"],
} as const;

/** espeak-ng voices (languages) used for each language family. */
export const LANG_VOICES: Record<string, string[]> = {
  en: ["en-us", "en", "en-gb-scotland", "en-gb-x-rp", "en-029", "en-us-nyc"],
  de: ["de"],
  fr: ["fr", "fr-be"],
  es: ["es"],
  it: ["it"],
  nl: ["nl"],
  pt: ["pt"],
};

const FUNCTION_WORDS: Record<string, string[]> = {
  en:
    "the a of and to in is it that was he for on are with as his they at be this have from or one had by but not what all were we when your can said there use an each which she do how their if will up other about out many then them these so some her would make like him into time has look two more"
      .split(" "),
  de:
    "der die das und zu in ist es dass war er für auf sind mit als sein sie an sein dies haben von oder ein eine hatte aber nicht was alle wir wenn kann sagte dort wie ihr ob wird um viele dann so einige würde mehr mal ich du bitte"
      .split(" "),
  fr:
    "le la les de et à en est il que était pour sur sont avec comme son ils au être ce avoir du ou un une avait par mais pas quoi tous nous quand peut dit là comment leur si sera beaucoup puis alors je tu vous bien très"
      .split(" "),
};

const DICTS: Record<string, { path: string; ok: RegExp }> = {
  en: { path: "/usr/share/dict/american-english", ok: /^[a-z]{2,10}$/ },
  de: { path: "/usr/share/dict/ngerman", ok: /^[a-zäöüßA-ZÄÖÜ][a-zäöüß]{1,11}$/ },
  fr: { path: "/usr/share/dict/french", ok: /^[a-zàâçéèêëîïôûùüÿœæ]{2,11}$/ },
};
const dictCache = new Map<string, string[]>();

/** Words of a language's word list (Debian `wamerican`, `wngerman`, `wfrench`). */
export function dictionary(lang: string): string[] {
  let words = dictCache.get(lang);
  if (!words) {
    const d = DICTS[lang];
    if (!d) return [];
    try {
      words = Deno.readTextFileSync(d.path).split("\n").filter((w) => d.ok.test(w));
    } catch {
      throw new Error(`${d.path} is missing: apt-get install -y wamerican wngerman wfrench`);
    }
    dictCache.set(lang, words);
  }
  return words;
}

const SYLLABLES: Record<string, { c: string[]; v: string[] }> = {
  es: { c: "p b m f v t d k g s l n r ch ll ñ j z".split(" "), v: "a e i o u".split(" ") },
  it: { c: "p b m f v t d c g s l n r z gn sc".split(" "), v: "a e i o u".split(" ") },
  nl: { c: "p b m f v t d k g s l n r w z sch".split(" "), v: "a e i o u oe ie aa ee oo ui".split(" ") },
  pt: { c: "p b m f v t d c g s l n r j ch lh nh".split(" "), v: "a e i o u ão".split(" ") },
};

/**
 * A random sentence: dictionary words mixed with function words (en, de, fr), or pseudo-words of
 * consonant-vowel syllables (other languages), with commas and a final full stop or question mark.
 * About half of the content words hold a /p b m f v/ letter.
 */
export function randomSentence(lang: string, r: () => number): string {
  const n = 3 + Math.floor(r() * 10);
  const words: string[] = [];
  const dict = dictionary(lang);
  const fw = FUNCTION_WORDS[lang];
  for (let i = 0; i < n; i++) {
    let w: string;
    if (dict.length && fw) {
      if (r() < 0.35) w = pick(r, fw);
      else {
        const labial = r() < 0.5;
        w = pick(r, dict);
        for (let k = 0; labial && k < 20 && !/[pbmfv]/.test(w); k++) w = pick(r, dict);
      }
    } else {
      const s = SYLLABLES[lang] ?? SYLLABLES.es;
      w = "";
      const syl = 1 + Math.floor(r() * 3);
      for (let k = 0; k < syl; k++) w += pick(r, s.c) + pick(r, s.v);
    }
    words.push(w);
    if (i < n - 1 && r() < 0.12) words[words.length - 1] += ",";
  }
  let text = words.join(" ");
  text = text[0].toUpperCase() + text.slice(1) + (r() < 0.2 ? "?" : ".");
  return text;
}

/**
 * Sentences of the bench (not used for training): many /p b m f v/ and pauses, per language.
 */
export const BENCH_SENTENCES: Record<string, string[]> = {
  en: [
    "Bob made a map of the big pub, maybe five; then Pam paused.",
    "Please pass the peppermint, Mom. My favourite is the purple box.",
    "Five brave farmers moved the heavy vans before the flood.",
    "Maybe the bright blue balloon will float above the problem.",
    "I bought a new phone; it vibrates, beeps, and buzzes.",
    "The baby met my puppy at the beach, and both were happy.",
    "Move the fabric from the bottom of the basket, please.",
    "Philip wants a map of every bus stop in Birmingham.",
    "Come back in a minute. Everyone will be fine.",
    "We provide premium support for members, by phone or by mail.",
    "Marvin found a pebble by the pump, then a bubble burst.",
    "Victor prefers vanilla, but Bella prefers plum pie.",
    "My brother bought both pumpkins before the market closed.",
    "Who moved my big brown bag? Maybe Fiona, maybe Ben.",
    "The ambulance parked beside the hospital, and the medics ran.",
  ],
  de: [
    "Bitte bring mir morgen frische Brötchen vom Bäcker mit.",
    "Mein Vater fährt mit dem Bus nach Berlin, vielleicht am Montag.",
    "Peter malt ein Bild von Pferden, Pflanzen und Bäumen.",
    "Wo ist meine blaue Mappe? Ich brauche sie jetzt.",
    "Fünf Freunde baden im Meer, bevor der Sturm beginnt.",
    "Am Abend probieren wir Apfelkuchen mit Sahne.",
    "Das Problem bleibt: Wir haben kein Papier mehr.",
    "Paul baut ein Modell vom Flughafen, sehr präzise.",
    "Im Park spielen Kinder Ball, und die Mutter wartet.",
    "Vielen Dank für Ihre Bemühungen, bis bald!",
  ],
  fr: [
    "Bonjour, je voudrais un peu de pain et du beurre, merci.",
    "Mon père a pris le bus pour Paris mardi matin.",
    "Pierre boit un verre de vin blanc avec ses amis.",
    "Le petit bateau flotte sur la mer, puis il part.",
    "Marie aime beaucoup les pommes, mais pas les prunes.",
    "Vous pouvez me montrer le plan du musée, s'il vous plaît?",
    "Le bébé dort paisiblement dans sa maison.",
    "Nous partons en vacances au mois de février.",
    "Ma mère prépare un bon repas pour la famille.",
    "Philippe a perdu son portefeuille au bureau, pas de chance!",
  ],
};

/**
 * Speaks `text` with espeak-ng and builds its timeline from the phoneme and word events
 * (`speechTimings`: a voiceless stop's silent closure belongs to the stop).
 */
export function espeakUtterance(
  lib: EspeakLib,
  id: string,
  text: string,
  voice: EspeakVoiceOptions,
  lang: string,
): Utterance {
  const speech = lib.synthesize(text, voice);
  const t = speechTimings(speech, text);
  const segments: Segment[] = t.phonemes.map((p) => {
    const pv = phonemeVisemes(p.phoneme, voice.voice);
    return {
      startMs: p.start_ms,
      endMs: p.end_ms,
      phoneme: pv?.phoneme ?? "",
      parts: pv?.parts ?? [{ viseme: "sil", share: 1 }],
    };
  });
  if (segments.length && segments[0].startMs > 0) {
    segments.unshift({
      startMs: 0,
      endMs: segments[0].startMs,
      phoneme: "",
      parts: [{ viseme: "sil", share: 1 }],
    });
  }
  return {
    id,
    lang,
    voice: voiceName(voice),
    text,
    samples: speech.samples,
    sampleRate: speech.sampleRate,
    segments,
    words: t.words,
  };
}

function voiceName(v: EspeakVoiceOptions): string {
  return `espeak:${v.voice}:r${v.rate ?? 175}:p${v.pitch ?? 50}`;
}

/** Festival's US phone set → IPA-like names the viseme table knows. */
const FESTIVAL_PHONES: Record<string, string> = {
  aa: "ɑ",
  ae: "æ",
  ah: "ʌ",
  ao: "ɔ",
  aw: "aʊ",
  ax: "ə",
  axr: "ɚ",
  ay: "aɪ",
  eh: "ɛ",
  er: "ɚ",
  ey: "eɪ",
  ih: "ɪ",
  iy: "i",
  ow: "oʊ",
  oy: "ɔɪ",
  uh: "ʊ",
  uw: "u",
  b: "b",
  p: "p",
  m: "m",
  em: "m",
  f: "f",
  v: "v",
  th: "θ",
  dh: "ð",
  t: "t",
  d: "d",
  dx: "ɾ",
  k: "k",
  g: "ɡ",
  ng: "ŋ",
  ch: "tʃ",
  jh: "dʒ",
  sh: "ʃ",
  zh: "ʒ",
  s: "s",
  z: "z",
  n: "n",
  en: "n",
  nx: "n",
  l: "l",
  el: "l",
  r: "ɹ",
  w: "w",
  y: "j",
  hh: "h",
  hv: "h",
};

/** Festival's English voices (Debian `festvox-kallpc16k`, `festvox-kdlpc16k`, `festvox-us-slt-hts`). */
export const FESTIVAL_VOICES = ["kal_diphone", "ked_diphone", "cmu_us_slt_arctic_hts"] as const;

/**
 * Speaks `text` with a Festival voice (held out: use for scoring only) and reads its segment and word
 * relations as the timeline.
 */
export async function festivalUtterance(id: string, text: string, voice: string): Promise<Utterance> {
  const dir = await Deno.makeTempDir({ prefix: "lipsync-festival-" });
  try {
    const esc = text.replace(/\\/g, "\\\\").replace(/"/g, '\\"');
    const script = `(voice_${voice})
(set! utt (Utterance Text "${esc}"))
(utt.synth utt)
(utt.save.wave utt "${dir}/a.wav" 'riff)
(utt.save.segs utt "${dir}/a.segs")
(utt.save.words utt "${dir}/a.words")
`;
    await Deno.writeTextFile(`${dir}/s.scm`, script);
    const out = await new Deno.Command("festival", {
      args: ["-b", `${dir}/s.scm`],
      stdout: "piped",
      stderr: "piped",
    })
      .output();
    if (!out.success) {
      throw new Error(`festival failed: ${new TextDecoder().decode(out.stderr).slice(0, 300)}`);
    }
    const { samples, sampleRate } = parseWav(await Deno.readFile(`${dir}/a.wav`));
    const wav = { samples, sampleRate };
    const durMs = wav.samples.length * 1000 / wav.sampleRate;
    const segments: Segment[] = [];
    let prevEnd = 0;
    for (const [endS, name] of readLabels(await Deno.readTextFile(`${dir}/a.segs`))) {
      const end = Math.min(durMs, endS * 1000);
      if (end <= prevEnd) continue;
      const ipa = FESTIVAL_PHONES[name];
      const pv = ipa ? phonemeVisemes(ipa, "en-us") : null;
      segments.push({
        startMs: prevEnd,
        endMs: end,
        phoneme: pv?.phoneme ?? "",
        parts: pv?.parts ?? [{ viseme: "sil", share: 1 }],
      });
      prevEnd = end;
    }
    if (prevEnd < durMs) {
      segments.push({ startMs: prevEnd, endMs: durMs, phoneme: "", parts: [{ viseme: "sil", share: 1 }] });
    }
    const words: TimedWord[] = [];
    let wStart = 0;
    for (const [endS, name] of readLabels(await Deno.readTextFile(`${dir}/a.words`))) {
      const end = endS * 1000;
      // A word starts where its first phoneme starts: skip a pause right before it.
      const first = segments.find((s) => s.endMs > wStart + 0.5 && s.phoneme !== "");
      const start = first ? Math.max(wStart, first.startMs) : wStart;
      if (name && end > start) {
        words.push({ word: name, start_ms: Math.round(start), end_ms: Math.round(end) });
      }
      wStart = end;
    }
    return { id, lang: "en", voice: `festival:${voice}`, text, ...wav, segments, words };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function readLabels(text: string): [number, string][] {
  const lines = text.split("\n");
  const hash = lines.findIndex((l) => l.trim() === "#");
  return lines.slice(hash + 1).map((l) => l.trim().split(/\s+/)).filter((p) => p.length >= 3)
    .map((p) => [Number(p[0]), p[2]] as [number, string]);
}

/** The true viseme of every 10 ms frame (the one covering the frame's centre), as viseme indexes. */
export function frameLabels(segments: readonly Segment[], durationMs: number): Uint8Array {
  const n = Math.ceil(durationMs / 10);
  const out = new Uint8Array(n); // 0 = sil
  let si = 0;
  for (let f = 0; f < n; f++) {
    const t = f * 10 + 5;
    while (si < segments.length && segments[si].endMs <= t) si++;
    const s = segments[si];
    if (!s || s.startMs > t) continue;
    let acc = s.startMs;
    let v = s.parts.at(-1)!.viseme;
    for (const p of s.parts) {
      acc += p.share * (s.endMs - s.startMs);
      if (t < acc) {
        v = p.viseme;
        break;
      }
    }
    out[f] = VISEME_INDEX[v];
  }
  return out;
}

/** Picks an espeak-ng voice of a split for a language, with random rate, pitch and range. */
export function randomVoice(
  split: keyof typeof VARIANT_SPLITS,
  lang: string,
  r: () => number,
): EspeakVoiceOptions {
  const base = pick(r, LANG_VOICES[lang]);
  const variant = pick(r, VARIANT_SPLITS[split]);
  return {
    voice: variant ? `${base}+${variant}` : base,
    rate: Math.round(120 + r() * 150),
    pitch: Math.round(15 + r() * 70),
    range: Math.round(10 + r() * 65), // espeak-ng 1.51 can crash with ranges near 90
  };
}
