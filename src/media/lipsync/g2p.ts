/**
 * Text → phonemes for lip sync: words of a transcript to their visemes, per language, with espeak-ng's
 * rules and dictionaries run in process (libespeak-ng through FFI, `src/speech/espeak_lib.ts`): no process
 * per session or per word. Results are cached per (language, word).
 *
 * @module
 */
import { espeakLib, espeakLibError } from "../../speech/espeak_lib.ts";
import { type PhonemeVisemes, phonemeVisemes, splitPhonemeWords } from "./visemes.ts";

/** Text → phonemes for one language at a time. */
export interface G2p {
  /** The phonemes of one word (may be several for numbers or abbreviations); [] when it has none. */
  word(word: string, lang: string): PhonemeVisemes[];
}

/** Languages lip sync names, and the espeak-ng voice used for each. */
const VOICE_OF: Record<string, string> = {
  en: "en-us",
  "en-us": "en-us",
  "en-gb": "en",
  de: "de",
  fr: "fr",
  es: "es",
  it: "it",
  nl: "nl",
  pt: "pt",
  "pt-br": "pt-br",
  pl: "pl",
  sv: "sv",
  da: "da",
  nb: "nb",
  fi: "fi",
  cs: "cs",
  ru: "ru",
  tr: "tr",
};

/** The languages with text-to-phoneme support. */
export const G2P_LANGUAGES = Object.keys(VOICE_OF);

/** The espeak-ng voice for a language tag (`en`, `de-DE`, `fr_FR`, `pt-BR`), or null if unsupported. */
export function voiceForLanguage(lang: string): string | null {
  const tag = lang.toLowerCase().replace("_", "-");
  return VOICE_OF[tag] ?? VOICE_OF[tag.slice(0, 2)] ?? null;
}

/** G2P with libespeak-ng; a bounded cache per process. */
export class EspeakG2p implements G2p {
  readonly #cache = new Map<string, PhonemeVisemes[]>();

  constructor(readonly maxEntries = 20_000) {}

  word(word: string, lang: string): PhonemeVisemes[] {
    const clean = word.normalize("NFC").replace(/[^\p{L}\p{N}'’-]/gu, "").slice(0, 64);
    if (!clean) return [];
    const voice = voiceForLanguage(lang) ?? "en-us";
    const key = `${voice}\u0000${clean.toLowerCase()}`;
    const hit = this.#cache.get(key);
    if (hit) return hit;
    const lib = espeakLib();
    if (!lib) throw new Error(`libespeak-ng is not available: ${espeakLibError}`);
    const out: PhonemeVisemes[] = [];
    for (const clause of lib.textToPhonemes(clean, voice)) {
      for (const w of splitPhonemeWords(clause)) {
        for (const p of w) {
          const pv = phonemeVisemes(p, voice);
          if (pv) out.push(pv);
        }
      }
    }
    this.#cache.set(key, out);
    if (this.#cache.size > this.maxEntries) this.#cache.delete(this.#cache.keys().next().value!);
    return out;
  }
}

let shared: EspeakG2p | null | undefined;

/** The process's G2P, or null when libespeak-ng cannot be loaded (lip sync then uses audio alone). */
export function defaultG2p(): G2p | null {
  if (shared === undefined) shared = espeakLib() ? new EspeakG2p() : null;
  return shared;
}

const STOPWORDS: Record<string, string[]> = {
  en: "the and is you that it of to a in for this with are was have not what be your on we".split(" "),
  de: "der die das und ist nicht ich sie es zu den mit ein eine sich auch auf für wir ihr bitte".split(" "),
  fr: "le la les et est une un des pas je vous que qui pour dans ce il nous avec sur".split(" "),
  es: "el la los las y es un una que no por para con del se lo como pero muy".split(" "),
  it: "il lo la gli le e è un una che non per con del di sono come ma molto".split(" "),
  nl: "de het een en is niet ik je dat van wat met voor op zijn maar ook".split(" "),
  pt: "o a os as e é um uma que não para com do da em se mas muito você".split(" "),
};

/** Guesses the language of a transcript from its common words (null when it cannot tell). */
export function guessLanguage(text: string): string | null {
  const words = text.toLowerCase().split(/[^\p{L}]+/u).filter(Boolean);
  if (words.length < 3) return null;
  let best: string | null = null, bestScore = 0, second = 0;
  for (const [lang, list] of Object.entries(STOPWORDS)) {
    const set = new Set(list);
    const score = words.filter((w) => set.has(w)).length;
    if (score > bestScore) {
      second = bestScore;
      bestScore = score;
      best = lang;
    } else if (score > second) second = score;
  }
  return bestScore >= 2 && bestScore > second ? best : null;
}
