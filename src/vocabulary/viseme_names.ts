/**
 * The 15 viseme names as the API spells them (`GET /v1/avatars/{id}/preview.png?viseme=`), for the floors
 * that load no media code. The media plane's list (`media/lipsync/visemes.ts`) is the same; a test holds
 * them equal.
 *
 * @module
 */

/** The 15 Oculus visemes, in canonical order. */
export const VISEME_NAMES = [
  "sil",
  "PP",
  "FF",
  "TH",
  "DD",
  "kk",
  "CH",
  "SS",
  "nn",
  "RR",
  "aa",
  "E",
  "ih",
  "oh",
  "ou",
] as const;
