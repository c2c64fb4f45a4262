/**
 * The 15 viseme names as the API spells them (`GET /v1/avatars/{id}/preview.png?viseme=`), for the floors
 * that load no media code; the media plane's list (`media/lipsync/visemes.ts`) and the CLI take it from here.
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
