/**
 * Draws the contact sheet of the docs: every catalog avatar's mouth for each of the 15 visemes (and, on a
 * last row, blends between neighbours), rendered from the same SVG art the service rasterises.
 *
 *     deno run -A scripts/lipsync/contact_sheet.ts [--out docs/images/lipsync-mouths.png]
 *
 * @module
 */
import { Resvg } from "@resvg/resvg-wasm";
import { parseArgs } from "node:util";
import { faceSvg, LOOKS } from "../../src/media/art/avatars.ts";
import { blendPose, VISEME_POSES } from "../../src/media/art/mouth.ts";
import { CATALOG } from "../../src/media/catalog.ts";
import { VISEME_INDEX, VISEMES } from "../../src/media/lipsync/visemes.ts";
import { initRasteriser } from "../../src/media/raster.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: { out: { type: "string", default: "docs/images/lipsync-mouths.png" } },
});

const COLS = 11;
const CELL_W = 180, CELL_H = 150, LABEL = 22, PAD = 8, TITLE = 34;
// The part of the 512×512 face each cell shows: from below the eyes to the chin.
const VIEW = { x: 206, y: 270, w: 100, h: 83 };
// Looks are shown on the whole face.
const FACE_VIEW = { x: 140, y: 110, w: 232, h: 193 };

const inner = (doc: string) => doc.replace(/^<svg[^>]*>/, "").replace(/<\/svg>$/, "");

function cell(x: number, y: number, face: string, label: string, idPrefix: string, view = VIEW): string {
  // Ids inside each face must be unique in the sheet.
  const body = inner(face).replace(/id="([^"]+)"/g, `id="${idPrefix}$1"`).replace(
    /url\(#([^)]+)\)/g,
    `url(#${idPrefix}$1)`,
  );
  return `<g transform="translate(${x} ${y})">
    <rect width="${CELL_W}" height="${CELL_H + LABEL}" rx="8" fill="#ffffff" stroke="#d0d4da"/>
    <svg x="4" y="4" width="${CELL_W - 8}" height="${
    CELL_H - 8
  }" viewBox="${view.x} ${view.y} ${view.w} ${view.h}">${body}</svg>
    <text x="${CELL_W / 2}" y="${CELL_H + 14}" font-size="16" text-anchor="middle" fill="#222">${label}</text>
  </g>`;
}

const rows: string[] = [];
let y = PAD;
let n = 0;
const blends: [string, string][] = [["PP", "aa"], ["aa", "ou"], ["FF", "E"], ["SS", "oh"]];
for (const a of CATALOG.avatars) {
  rows.push(
    `<text x="${PAD}" y="${y + 24}" font-size="22" font-weight="bold" fill="#222">${a.name} (${a.id})</text>`,
  );
  y += TITLE;
  const items: { label: string; face: string; view?: typeof VIEW }[] = VISEMES.map((v) => ({
    label: v,
    face: faceSvg(a.style, { pose: VISEME_POSES[v] }),
  }));
  for (const [p, q] of blends) {
    const w = new Float32Array(VISEMES.length);
    w[VISEME_INDEX[p as keyof typeof VISEME_INDEX]] = 0.5;
    w[VISEME_INDEX[q as keyof typeof VISEME_INDEX]] = 0.5;
    items.push({ label: `½ ${p} + ½ ${q}`, face: faceSvg(a.style, { pose: blendPose(w) }) });
  }
  for (const look of LOOKS) {
    items.push({
      label: `${look} look`,
      face: faceSvg(a.style, { pose: VISEME_POSES.sil, look }),
      view: FACE_VIEW,
    });
  }
  for (let i = 0; i < items.length; i++) {
    const col = i % COLS;
    if (i > 0 && col === 0) y += CELL_H + LABEL + PAD;
    rows.push(cell(PAD + col * (CELL_W + PAD), y, items[i].face, items[i].label, `c${n++}`, items[i].view));
  }
  y += CELL_H + LABEL + PAD * 3;
}
const width = PAD + COLS * (CELL_W + PAD);
const sheet =
  `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${y}" viewBox="0 0 ${width} ${y}">
  <rect width="${width}" height="${y}" fill="#eef1f5"/>${rows.join("\n")}</svg>`;

await initRasteriser();
const fonts = [];
for (
  const f of [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf",
  ]
) {
  try {
    fonts.push(await Deno.readFile(f));
  } catch { /* labels need the fonts-dejavu-core package */ }
}
const r = new Resvg(sheet, {
  fitTo: { mode: "original" },
  font: { fontBuffers: fonts, defaultFontFamily: "DejaVu Sans", loadSystemFonts: false },
});
const png = r.render().asPng();
await Deno.mkdir(values.out!.replace(/\/[^/]+$/, ""), { recursive: true });
await Deno.writeFile(values.out!, png);
console.error(`wrote ${values.out} (${width}×${y})`);
