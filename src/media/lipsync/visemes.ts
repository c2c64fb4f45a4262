/**
 * The 15 Oculus visemes, the 7 mouth classes lip sync is scored in, and how phonemes (IPA, as espeak-ng
 * writes them, in any of its languages) become visemes. Pure data and functions: no Deno API, so the
 * browser can use the same module.
 *
 * @module
 */
import { VISEME_NAMES } from "../../vocabulary/viseme_names.ts";

/** The 15 Oculus visemes, in their canonical order (indexes of weight vectors follow it): the vocabulary's. */
export const VISEMES = VISEME_NAMES;
/** One viseme. */
export type Viseme = (typeof VISEMES)[number];
/** Number of visemes (15). */
export const VISEME_COUNT = VISEMES.length;
/** Index of each viseme in {@link VISEMES}. */
export const VISEME_INDEX: Readonly<Record<Viseme, number>> = Object.fromEntries(
  VISEMES.map((v, i) => [v, i]),
) as Record<Viseme, number>;

/** The 7 classes lip sync is scored in. */
export const CLASSES = ["silence", "closed", "lip-teeth", "open", "round", "spread", "consonant"] as const;
/** One of the 7 classes. */
export type VisemeClass = (typeof CLASSES)[number];
/** Class of each viseme. */
export const CLASS_OF: Readonly<Record<Viseme, VisemeClass>> = {
  sil: "silence",
  PP: "closed",
  FF: "lip-teeth",
  TH: "consonant",
  DD: "consonant",
  kk: "consonant",
  CH: "consonant",
  SS: "consonant",
  nn: "consonant",
  RR: "consonant",
  aa: "open",
  oh: "open",
  ou: "round",
  E: "spread",
  ih: "spread",
};

/** Whether `s` is one of the 15 viseme names. */
export function isViseme(s: unknown): s is Viseme {
  return typeof s === "string" && (VISEMES as readonly string[]).includes(s);
}

/** One part of a phoneme: a viseme for a share of the phoneme's duration. */
export interface VisemePart {
  viseme: Viseme;
  share: number;
}

/** A phoneme as lip sync sees it: its visemes and a relative duration. */
export interface PhonemeVisemes {
  /** The phoneme as written (IPA, stress marks removed). */
  phoneme: string;
  parts: VisemePart[];
  /** Typical duration relative to a short vowel (1). */
  weight: number;
}

/** Vowels and their viseme. Diphthongs are sequences of these. */
const VOWELS: Record<string, Viseme> = {
  a: "aa",
  "ɑ": "aa",
  "æ": "aa",
  "ʌ": "aa",
  "ɐ": "aa",
  "ɒ": "oh",
  e: "E",
  "ɛ": "E",
  "ə": "E",
  "ɜ": "E",
  "ɘ": "E",
  "ɵ": "oh",
  i: "ih",
  "ɪ": "ih",
  "ᵻ": "ih",
  "ɨ": "ih",
  o: "oh",
  "ɔ": "oh",
  u: "ou",
  "ʊ": "ou",
  "ɯ": "ou",
  y: "ou",
  "ʏ": "ou",
  "ø": "oh",
  "œ": "oh",
  "ɚ": "RR",
  "ɝ": "RR",
};

/** Consonants (and glides) and their viseme. */
const CONSONANTS: Record<string, Viseme> = {
  p: "PP",
  b: "PP",
  m: "PP",
  "ɱ": "FF",
  f: "FF",
  v: "FF",
  "ʋ": "FF",
  "β": "FF",
  "ɸ": "FF",
  "θ": "TH",
  "ð": "TH",
  t: "DD",
  d: "DD",
  "ɾ": "DD",
  "ʈ": "DD",
  "ɖ": "DD",
  k: "kk",
  g: "kk",
  "ɡ": "kk",
  q: "kk",
  "ŋ": "kk",
  x: "kk",
  "ɣ": "kk",
  "χ": "kk",
  h: "kk",
  "ɦ": "kk",
  "ʔ": "kk",
  "ç": "CH",
  "ʃ": "CH",
  "ʒ": "CH",
  "ɕ": "CH",
  "ʑ": "CH",
  "ʂ": "CH",
  "ʐ": "CH",
  s: "SS",
  z: "SS",
  n: "nn",
  "ɲ": "nn",
  "ɳ": "nn",
  l: "nn",
  "ɫ": "nn",
  "ʎ": "nn",
  "ɬ": "nn",
  "ɭ": "nn",
  r: "RR",
  "ɹ": "RR",
  "ʁ": "RR",
  "ʀ": "RR",
  "ɻ": "RR",
  j: "ih",
  w: "ou",
  "ɥ": "ou",
  "ʍ": "ou",
};

/** Multi-letter phonemes that are one sound (affricates). */
const AFFRICATES: Record<string, VisemePart[]> = {
  "tʃ": [{ viseme: "CH", share: 1 }],
  "dʒ": [{ viseme: "CH", share: 1 }],
  "ts": [{ viseme: "DD", share: 0.4 }, { viseme: "SS", share: 0.6 }],
  "dz": [{ viseme: "DD", share: 0.4 }, { viseme: "SS", share: 0.6 }],
  "pf": [{ viseme: "PP", share: 0.5 }, { viseme: "FF", share: 0.5 }],
  "tɕ": [{ viseme: "CH", share: 1 }],
  "dʑ": [{ viseme: "CH", share: 1 }],
};

const STOPS = new Set(["p", "b", "t", "d", "k", "g", "ɡ", "q", "ʔ"]);
const IGNORED = /[ˈˌ\-_‿|'%,.!?;:̯͡‍ʰʲʷˠ̪̥̬̚]/gu;
const NASAL = "\u0303";
const SYLLABIC = "\u0329";

/** Weight of a consonant viseme (duration relative to a short vowel). */
function consonantWeight(c: string): number {
  if (STOPS.has(c)) return 0.8;
  if ("szʃʒfvθðxçh".includes(c)) return 0.9;
  if ("mnŋɲ".includes(c)) return 0.75;
  if ("ɾ".includes(c)) return 0.35;
  return 0.6;
}

/**
 * The visemes of one phoneme written in IPA as espeak-ng writes it (`ˈaɪ`, `tʃ`, `ɑːɹ`, `ɔ̃`, `n̩`), for a
 * language (`en`, `en-us`, `de`, `fr`, …: a few symbols differ between languages). Null for an empty
 * phoneme or a language switch marker like `(en)`.
 */
export function phonemeVisemes(ipa: string, lang = "en"): PhonemeVisemes | null {
  if (/^\(.*\)$/.test(ipa)) return null;
  const clean = ipa.normalize("NFD").replace(IGNORED, "");
  if (clean === "") return null;
  const aff = AFFRICATES[clean.replace(/[ː]/g, "")];
  if (aff) return { phoneme: clean, parts: aff, weight: 0.95 };
  const family = lang.slice(0, 2).toLowerCase();
  const parts: { viseme: Viseme; w: number }[] = [];
  let vowels = 0;
  for (let i = 0; i < clean.length; i++) {
    const ch = clean[i];
    if (ch === "ː") {
      if (parts.length) parts[parts.length - 1].w += 0.5;
      continue;
    }
    if (ch === NASAL || ch === SYLLABIC) continue;
    let v: Viseme | undefined = VOWELS[ch];
    if (v) {
      if (ch === "ɜ") v = family === "de" ? "aa" : lang.toLowerCase().startsWith("en-us") ? "RR" : "E";
      vowels++;
      parts.push({ viseme: v, w: 1 });
      continue;
    }
    v = CONSONANTS[ch];
    if (ch === "ɾ" && (family === "de" || family === "fr")) v = "RR";
    if (v) parts.push({ viseme: v, w: consonantWeight(ch) });
  }
  if (parts.length === 0) return null;
  // A diphthong's first part is held longer than its glide.
  if (vowels >= 2) parts[0].w *= 1.3;
  const total = parts.reduce((s, p) => s + p.w, 0);
  const merged: VisemePart[] = [];
  for (const p of parts) {
    const last = merged.at(-1);
    if (last && last.viseme === p.viseme) last.share += p.w / total;
    else merged.push({ viseme: p.viseme, share: p.w / total });
  }
  const weight = vowels >= 2 ? 1.5 + 0.3 * (vowels - 2) : total;
  return { phoneme: clean, parts: merged, weight };
}

/** Splits espeak-ng's phoneme output (phonemes separated by spaces, words by two or more) into words. */
export function splitPhonemeWords(ipa: string): string[][] {
  return ipa.split(/\s{2,}/).map((w) => w.trim().split(/\s+/).filter(Boolean)).filter((w) => w.length > 0);
}
