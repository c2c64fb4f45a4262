/**
 * `deno run -A scripts/avatar_sheets.ts [--seed N]`: draws the two pictures of docs/avatars.md from the art
 * code itself: `docs/images/avatars-contact-sheet.png` (12 avatars from random styles, each at rest and
 * saying "aa") and `docs/images/avatar-choices.png` (every choice of every style parameter, the others at
 * their defaults). Random styles come from a seeded generator, so the sheet is reproducible.
 *
 * @module
 */
import { Resvg } from "@resvg/resvg-wasm";
import { composedFace } from "../src/media/art/avatar_raster.ts";
import { layersOfLook } from "../src/media/art/layers.ts";
import { lookOfStyle } from "../src/media/art/style_art.ts";
import { initRasteriser } from "../src/media/raster.ts";
import {
  ACCESSORIES,
  BROW_STYLES,
  CLOTHING_STYLES,
  EYE_SHAPES,
  FACE_SHAPES,
  FACIAL_HAIR,
  GLASSES,
  HAIR_STYLES,
  parseAvatarStyle,
} from "../src/vocabulary/avatar_style.ts";

const CELL = 160;

/** A small seeded generator (mulberry32). */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SKINS = ["#f6d2b4", "#efc3a0", "#e0ac84", "#c68a5e", "#a86b45", "#7a4a2c", "#5a3420"];
const HAIRS = ["#14110f", "#3b2418", "#6a4a2a", "#9a4a22", "#d8b060", "#b8b8b8", "#4060c0"];

function pngBase64(svg: string): string {
  const r = new Resvg(svg, { fitTo: { mode: "width", value: CELL }, background: "rgba(0,0,0,0)" });
  const png = r.render().asPng();
  r.free();
  let s = "";
  for (const b of png) s += String.fromCharCode(b);
  return btoa(s);
}

function sheet(
  cells: { style: Record<string, unknown>; viseme: "sil" | "aa"; label?: string }[],
  columns: number,
) {
  const rows = Math.ceil(cells.length / columns);
  const labelH = cells.some((c) => c.label) ? 18 : 0;
  const parts = cells.map((c, i) => {
    const x = (i % columns) * CELL, y = Math.floor(i / columns) * (CELL + labelH);
    const img = pngBase64(composedFace(layersOfLook(lookOfStyle(parseAvatarStyle(c.style))), c.viseme));
    const label = c.label
      ? `<text x="${x + CELL / 2}" y="${
        y + CELL + 13
      }" font-family="sans-serif" font-size="12" text-anchor="middle" fill="#223">${c.label}</text>`
      : "";
    return `<image x="${x}" y="${y}" width="${CELL}" height="${CELL}" href="data:image/png;base64,${img}"/>${label}`;
  });
  const w = columns * CELL, h = rows * (CELL + labelH);
  const doc = `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}">` +
    `<rect width="${w}" height="${h}" fill="#dfe6ee"/>${parts.join("")}</svg>`;
  const r = new Resvg(doc, { fitTo: { mode: "original" }, font: { loadSystemFonts: true } });
  const png = r.render().asPng();
  r.free();
  return png;
}

if (import.meta.main) {
  await initRasteriser();
  const seedAt = Deno.args.indexOf("--seed");
  const next = random(seedAt >= 0 ? Number(Deno.args[seedAt + 1]) : 32);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)];
  const colour = () => `#${Math.floor(next() * 0xffffff).toString(16).padStart(6, "0")}`;
  const styles = Array.from({ length: 12 }, () => ({
    face_shape: pick(FACE_SHAPES),
    skin_color: pick(SKINS),
    hair_style: pick(HAIR_STYLES),
    hair_color: pick(HAIRS),
    eye_shape: pick(EYE_SHAPES),
    eye_color: colour(),
    brow_style: pick(BROW_STYLES),
    glasses: next() < 0.3 ? pick(GLASSES) : "none",
    facial_hair: next() < 0.35 ? pick(FACIAL_HAIR) : "none",
    freckles: next() < 0.25,
    clothing_style: pick(CLOTHING_STYLES),
    clothing_color: colour(),
    accessory: next() < 0.4 ? pick(ACCESSORIES) : "none",
    accessory_color: colour(),
  }));
  // Each avatar at rest, then saying "aa", side by side: 6 pairs a row.
  const contact = sheet(
    styles.flatMap((style) => [{ style, viseme: "sil" as const }, { style, viseme: "aa" as const }]),
    8,
  );
  await Deno.writeFile(new URL("../docs/images/avatars-contact-sheet.png", import.meta.url), contact);
  const choices: { style: Record<string, unknown>; viseme: "sil"; label: string }[] = [];
  for (
    const [name, values] of [
      ["face_shape", FACE_SHAPES],
      ["hair_style", HAIR_STYLES],
      ["clothing_style", CLOTHING_STYLES],
      ["eye_shape", EYE_SHAPES],
      ["brow_style", BROW_STYLES],
      ["glasses", GLASSES],
      ["facial_hair", FACIAL_HAIR],
      ["accessory", ACCESSORIES],
    ] as const
  ) {
    for (const v of values) choices.push({ style: { [name]: v }, viseme: "sil", label: `${name}: ${v}` });
  }
  choices.push({ style: { freckles: true }, viseme: "sil", label: "freckles: true" });
  await Deno.writeFile(new URL("../docs/images/avatar-choices.png", import.meta.url), sheet(choices, 8));
  console.log("wrote docs/images/avatars-contact-sheet.png and docs/images/avatar-choices.png");
}
