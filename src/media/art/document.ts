/**
 * The art of one avatar as a document for clients that draw the avatar themselves (video-free clients):
 * the very SVG layers the server's renderer rasterises (`avatars.ts`, `backgrounds.ts`, `mouth.ts`), so the
 * server and the browser draw from one source. Served at `GET /media/v0/art/{avatar_id}`; its format is
 * documented in docs/media-plane.md.
 *
 * Pure code (no Deno API).
 *
 * @module
 */
import type { Catalog } from "../catalog.ts";
import { VISEMES } from "../lipsync/visemes.ts";
import { EYE_STATES, LOOKS } from "./avatars.ts";
import { type AvatarLayers, layersOfLook, svgDocument } from "./layers.ts";
import { TRANSPARENT_FALLBACK } from "./backgrounds.ts";
import { VISEME_POSES } from "./mouth.ts";

/** The art document's format version. */
export const ART_FORMAT = "avatar-art.v0";

/** One avatar's art (every SVG on the same 512×512 view box). */
export interface ArtDocument {
  format: typeof ART_FORMAT;
  avatar_id: string;
  view_box: [number, number];
  /** Layers in drawing order: background, body, head, eyes, mouth; head, eyes and mouth move with the head. */
  body: string;
  head: string;
  /** Eyes and brows by eye state, then by look. */
  eyes: Record<string, Record<string, string>>;
  /**
   * The mouth of each of the 15 visemes (the pose the server's renderer blends from), drawn within
   * `mouth_box`, its ids prefixed with `m{viseme}-` so that no two mouths define the same.
   */
  mouths: Record<string, string>;
  /** Where the mouth is drawn (view-box px), for clients that redraw only it. */
  mouth_box: { x: number; y: number; width: number; height: number };
  /** Each background of the catalog; null for a transparent one (the page shows through). */
  backgrounds: Record<string, string | null>;
  /** What a transparent background becomes where there is no alpha (video frames). */
  transparent_fallback: string;
}

/**
 * The largest art document a video-free client's hello carries (UTF-8 bytes of its JSON): a stock avatar's
 * is ≈ 35 KB and saves the client a request before its first picture; a customer's drawing may make one of
 * several MB, which would hold up the sound behind it, and is fetched from `art_path` instead.
 */
export const ART_INLINE_MAX_BYTES = 64 * 1024;

/**
 * Where an art document draws the mouth, in its view box: what a video client's hello carries so that the
 * player can read the mouth of the frames it shows without fetching the art (a customer's drawing makes a
 * document of several MB).
 */
export interface MouthPlace {
  mouth_box: ArtDocument["mouth_box"];
  view_box: [number, number];
}

/** The mouth's place in `doc` ({@link MouthPlace}). */
export function mouthPlace(doc: ArtDocument): MouthPlace {
  return { mouth_box: { ...doc.mouth_box }, view_box: [doc.view_box[0], doc.view_box[1]] };
}

/** `doc` when it is small enough to go in a hello ({@link ART_INLINE_MAX_BYTES}), else null. */
export function inlineArt(doc: ArtDocument): ArtDocument | null {
  return new TextEncoder().encode(JSON.stringify(doc)).length <= ART_INLINE_MAX_BYTES ? doc : null;
}

/** The art document of `avatarId`, or null when the catalog has no such avatar. */
export function artDocument(catalog: Catalog, avatarId: string): ArtDocument | null {
  const a = catalog.avatars.find((x) => x.id === avatarId);
  return a ? artDocumentOfLayers(catalog, a.id, layersOfLook(a.style)) : null;
}

/** The art document of any avatar's layers (a stock avatar's, a style's or a drawing's). */
export function artDocumentOfLayers(catalog: Catalog, avatarId: string, layers: AvatarLayers): ArtDocument {
  const a = { id: avatarId };
  const eyes: Record<string, Record<string, string>> = {};
  for (const s of EYE_STATES) {
    eyes[s] = {};
    for (const l of LOOKS) eyes[s][l] = layers.eyes(s, l);
  }
  return {
    format: ART_FORMAT,
    avatar_id: a.id,
    view_box: [512, 512],
    body: layers.body,
    head: layers.head,
    eyes,
    // Each mouth's ids prefixed with its viseme: a client may draw several in one document (a sheet).
    mouths: Object.fromEntries(
      VISEMES.map((v) => [v, svgDocument(layers.mouthElements(VISEME_POSES[v], `m${v}-`))]),
    ),
    mouth_box: { ...layers.mouthBox },
    backgrounds: Object.fromEntries(catalog.backgrounds.map((b) => [b.id, b.transparent ? null : b.svg()])),
    transparent_fallback: TRANSPARENT_FALLBACK,
  };
}
