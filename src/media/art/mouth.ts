/**
 * The avatars' mouth: one parametric drawing (jaw opening, lip width, rounding, teeth, tongue, lower-lip
 * tuck, lip press) with a target pose for each of the 15 Oculus visemes. A blend of visemes (weights from
 * co-articulation) is the weighted mean of their poses, so a mouth moves through real intermediate
 * shapes instead of snapping.
 *
 * Pure functions returning SVG text (no Deno API, no DOM): the server rasterises them, a browser can put
 * them in the page as they are. All coordinates are on the avatars' 512×512 view box.
 *
 * @module
 */
import { type Viseme, VISEME_COUNT, VISEMES } from "../lipsync/visemes.ts";

/** A mouth pose. */
export interface MouthPose {
  /** Jaw and lip opening, 0 (closed) to 1 (wide open). */
  open: number;
  /** Lip corners, −1 (narrow) to 1 (stretched). */
  wide: number;
  /** Lip rounding and protrusion, 0 to 1. */
  round: number;
  /** Upper teeth showing, 0 to 1. */
  upperTeeth: number;
  /** Lower teeth showing, 0 to 1. */
  lowerTeeth: number;
  /** Tongue showing at the bottom of the mouth, 0 to 1. */
  tongue: number;
  /** Tongue tip between the teeth (th), 0 to 1. */
  tongueOut: number;
  /** Lower lip raised against the upper teeth (f, v), 0 to 1. */
  tuck: number;
  /** Lips pressed together (p, b, m), 0 to 1. */
  press: number;
}

/** The pose of each viseme. */
export const VISEME_POSES: Readonly<Record<Viseme, MouthPose>> = {
  sil: {
    open: 0,
    wide: 0,
    round: 0,
    upperTeeth: 0,
    lowerTeeth: 0,
    tongue: 0,
    tongueOut: 0,
    tuck: 0,
    press: 0,
  },
  PP: {
    open: 0,
    wide: -0.15,
    round: 0.1,
    upperTeeth: 0,
    lowerTeeth: 0,
    tongue: 0,
    tongueOut: 0,
    tuck: 0,
    press: 1,
  },
  FF: {
    open: 0.22,
    wide: 0.1,
    round: 0,
    upperTeeth: 1,
    lowerTeeth: 0,
    tongue: 0,
    tongueOut: 0,
    tuck: 1,
    press: 0,
  },
  TH: {
    open: 0.3,
    wide: 0.1,
    round: 0,
    upperTeeth: 0.9,
    lowerTeeth: 0.6,
    tongue: 0.3,
    tongueOut: 1,
    tuck: 0,
    press: 0,
  },
  DD: {
    open: 0.32,
    wide: 0.15,
    round: 0,
    upperTeeth: 0.8,
    lowerTeeth: 0.5,
    tongue: 0.6,
    tongueOut: 0,
    tuck: 0,
    press: 0,
  },
  kk: {
    open: 0.42,
    wide: 0.2,
    round: 0,
    upperTeeth: 0.6,
    lowerTeeth: 0.3,
    tongue: 0.4,
    tongueOut: 0,
    tuck: 0,
    press: 0,
  },
  CH: {
    open: 0.3,
    wide: -0.45,
    round: 0.6,
    upperTeeth: 1,
    lowerTeeth: 1,
    tongue: 0,
    tongueOut: 0,
    tuck: 0,
    press: 0,
  },
  SS: {
    open: 0.2,
    wide: 0.55,
    round: 0,
    upperTeeth: 1,
    lowerTeeth: 1,
    tongue: 0,
    tongueOut: 0,
    tuck: 0,
    press: 0,
  },
  nn: {
    open: 0.28,
    wide: 0.15,
    round: 0,
    upperTeeth: 0.6,
    lowerTeeth: 0.3,
    tongue: 0.9,
    tongueOut: 0,
    tuck: 0,
    press: 0,
  },
  RR: {
    open: 0.34,
    wide: -0.35,
    round: 0.55,
    upperTeeth: 0.5,
    lowerTeeth: 0.2,
    tongue: 0.3,
    tongueOut: 0,
    tuck: 0,
    press: 0,
  },
  aa: {
    open: 1,
    wide: 0.25,
    round: 0,
    upperTeeth: 0.55,
    lowerTeeth: 0.15,
    tongue: 0.6,
    tongueOut: 0,
    tuck: 0,
    press: 0,
  },
  E: {
    open: 0.58,
    wide: 0.55,
    round: 0,
    upperTeeth: 0.75,
    lowerTeeth: 0.3,
    tongue: 0.35,
    tongueOut: 0,
    tuck: 0,
    press: 0,
  },
  ih: {
    open: 0.36,
    wide: 0.85,
    round: 0,
    upperTeeth: 0.9,
    lowerTeeth: 0.6,
    tongue: 0.2,
    tongueOut: 0,
    tuck: 0,
    press: 0,
  },
  oh: {
    open: 0.78,
    wide: -0.5,
    round: 0.75,
    upperTeeth: 0.2,
    lowerTeeth: 0,
    tongue: 0.35,
    tongueOut: 0,
    tuck: 0,
    press: 0,
  },
  ou: {
    open: 0.38,
    wide: -0.95,
    round: 1,
    upperTeeth: 0,
    lowerTeeth: 0,
    tongue: 0,
    tongueOut: 0,
    tuck: 0,
    press: 0,
  },
};

const KEYS: (keyof MouthPose)[] = [
  "open",
  "wide",
  "round",
  "upperTeeth",
  "lowerTeeth",
  "tongue",
  "tongueOut",
  "tuck",
  "press",
];

/** The pose of a blend: weights per viseme (in `VISEMES` order, any scale; all zero = `sil`). */
export function blendPose(weights: ArrayLike<number>): MouthPose {
  const out: MouthPose = { ...VISEME_POSES.sil };
  let total = 0;
  for (let v = 0; v < VISEME_COUNT; v++) total += Math.max(0, weights[v] ?? 0);
  if (total <= 0) return out;
  for (const k of KEYS) out[k] = 0;
  for (let v = 0; v < VISEME_COUNT; v++) {
    const w = Math.max(0, weights[v] ?? 0) / total;
    if (w === 0) continue;
    const p = VISEME_POSES[VISEMES[v]];
    for (const k of KEYS) out[k] += w * p[k];
  }
  return out;
}

/** A pose rounded to a grid (for caching rasterised mouths): 1/16 of the opening, 1/8 of the rest. */
export function quantisePose(p: MouthPose): MouthPose {
  const q = { ...p };
  for (const k of KEYS) {
    const steps = k === "open" ? 16 : 8;
    q[k] = Math.round(p[k] * steps) / steps;
  }
  return q;
}

/** A short stable key of a pose (after {@link quantisePose}). */
export function poseKey(p: MouthPose): string {
  return KEYS.map((k) => Math.round(p[k] * 16)).join(",");
}

/** Colours of a mouth. */
export interface MouthColours {
  lips: string;
  skinShade: string;
}

const f1 = (n: number) => Math.round(n * 10) / 10;

/** Where the mouth sits on the 512×512 view box, and the box it never leaves. */
export const MOUTH_CENTRE = { x: 256, y: 310 };
/** The region a mouth can draw into (x, y, width, height on the view box). */
export const MOUTH_BOX = { x: 208, y: 280, width: 96, height: 72 };

/** The SVG elements (no `<svg>` wrapper) of a mouth in a pose; ids are prefixed with `idPrefix`. */
export function mouthElements(c: MouthColours, p: MouthPose, idPrefix = "m"): string {
  const { x, y } = MOUTH_CENTRE;
  const round = clamp01(p.round);
  const press = clamp01(p.press);
  const tuck = clamp01(p.tuck);
  const hw = (25 + 6 * clamp(p.wide, -1, 1)) * (1 - 0.22 * round) * (1 - 0.06 * press);
  const H = 30 * clamp01(p.open);
  const yt = y - H * 0.32 - 0.6 * press; // inner edge of the upper lip
  const yb = y + H * 0.68 + 0.6 * press; // inner edge of the lower lip (jaw)
  // Pressed lips roll in (less red shows); rounded lips push out (more shows); a tucked lower lip hides.
  const lipT = (6 + 2.5 * round) * (1 - 0.4 * press);
  const lipB = (8 + 3 * round) * (1 - 0.35 * tuck) * (1 - 0.35 * press);
  const lx = x - hw, rx = x + hw, cy = y - 0.5;
  // Rounder lips bring the opening's sides up faster near the corners.
  const k = 0.18 + 0.45 * round;
  const inner =
    `M${f1(lx)} ${f1(cy)} C${f1(lx + hw * k)} ${f1(yt)} ${f1(x - hw * 0.45)} ${f1(yt)} ${f1(x)} ${f1(yt)} ` +
    `C${f1(x + hw * 0.45)} ${f1(yt)} ${f1(rx - hw * k)} ${f1(yt)} ${f1(rx)} ${f1(cy)} ` +
    `C${f1(rx - hw * k)} ${f1(yb)} ${f1(x + hw * 0.45)} ${f1(yb)} ${f1(x)} ${f1(yb)} ` +
    `C${f1(x - hw * 0.45)} ${f1(yb)} ${f1(lx + hw * k)} ${f1(yb)} ${f1(lx)} ${f1(cy)} Z`;
  // Outer edges: a cupid's bow on top, a full lower lip.
  const yu = yt - lipT;
  const yl = yb + lipB;
  const upper = `M${f1(lx - 1.5)} ${f1(cy)} C${f1(lx + hw * 0.25)} ${f1(yu + 4)} ${f1(x - 12)} ${
    f1(yu - 1)
  } ${f1(x - 6)} ${f1(yu)} Q${f1(x)} ${f1(yu + 2.5)} ${f1(x + 6)} ${f1(yu)} C${f1(x + 12)} ${f1(yu - 1)} ${
    f1(rx - hw * 0.25)
  } ${f1(yu + 4)} ${f1(rx + 1.5)} ${f1(cy)} C${f1(rx - hw * k)} ${f1(yt)} ${f1(x + hw * 0.45)} ${f1(yt)} ${
    f1(x)
  } ${f1(yt)} C${f1(x - hw * 0.45)} ${f1(yt)} ${f1(lx + hw * k)} ${f1(yt)} ${f1(lx - 1.5)} ${f1(cy)} Z`;
  const lower = `M${f1(lx - 1.5)} ${f1(cy)} C${f1(lx + hw * k)} ${f1(yb)} ${f1(x - hw * 0.45)} ${f1(yb)} ${
    f1(x)
  } ${f1(yb)} C${f1(x + hw * 0.45)} ${f1(yb)} ${f1(rx - hw * k)} ${f1(yb)} ${f1(rx + 1.5)} ${f1(cy)} C${
    f1(rx - hw * 0.2)
  } ${f1(yl - 1)} ${f1(x + hw * 0.5)} ${f1(yl + 1)} ${f1(x)} ${f1(yl + 1)} C${f1(x - hw * 0.5)} ${
    f1(yl + 1)
  } ${f1(lx + hw * 0.2)} ${f1(yl - 1)} ${f1(lx - 1.5)} ${f1(cy)} Z`;
  const parts: string[] = [];
  if (H > 0.6) {
    const id = `${idPrefix}cav`;
    const teethW = hw * 0.82;
    const inside: string[] = [
      `<rect x="${f1(lx)}" y="${f1(yt)}" width="${f1(2 * hw)}" height="${f1(H + 2)}" fill="#3a0f16"/>`,
    ];
    const tongue = clamp01(p.tongue);
    if (tongue > 0.02) {
      inside.push(
        `<ellipse cx="${x}" cy="${f1(yb + 1)}" rx="${f1(hw * 0.6)}" ry="${
          f1(Math.max(1, H * 0.45 * tongue))
        }" fill="#c4505f"/>`,
      );
    }
    const ut = clamp01(p.upperTeeth) * Math.min(7.5, H * (tuck > 0.5 ? 1 : 0.6));
    if (ut > 0.3) {
      inside.push(
        `<rect x="${f1(x - teethW)}" y="${f1(yt - 1)}" width="${f1(2 * teethW)}" height="${
          f1(ut + 1)
        }" rx="1.5" fill="#f4f1ea"/>`,
      );
    }
    const lt = clamp01(p.lowerTeeth) * Math.min(5, H * 0.4);
    if (lt > 0.3) {
      inside.push(
        `<rect x="${f1(x - teethW * 0.85)}" y="${f1(yb - lt)}" width="${f1(2 * teethW * 0.85)}" height="${
          f1(lt + 1)
        }" rx="1.5" fill="#e8e3d8"/>`,
      );
    }
    const to = clamp01(p.tongueOut);
    if (to > 0.05) {
      inside.push(
        `<ellipse cx="${x}" cy="${f1(y + H * 0.18)}" rx="${f1(hw * 0.42)}" ry="${
          f1(Math.max(1.5, H * 0.3) * to)
        }" fill="#d0606e"/>`,
      );
    }
    parts.push(
      `<clipPath id="${id}"><path d="${inner}"/></clipPath>`,
      `<g clip-path="url(#${id})">${inside.join("")}</g>`,
    );
  }
  parts.push(
    `<path d="${upper}" fill="${c.lips}"/>`,
    `<path d="${lower}" fill="${c.lips}"/>`,
    // A soft highlight on the lower lip, a darker line where the lips meet, shaded corners.
    `<ellipse cx="${x}" cy="${f1(yb + lipB * 0.45)}" rx="${f1(hw * 0.45)}" ry="${
      f1(Math.max(1, lipB * 0.22))
    }" fill="#ffffff" opacity="0.18"/>`,
  );
  if (H <= 0.6) {
    parts.push(
      `<path d="M${f1(lx)} ${f1(cy)} Q${x} ${f1(y + 2.5 - 2 * press)} ${f1(rx)} ${
        f1(cy)
      }" fill="none" stroke="#4a1a1e" stroke-width="${f1(2.2 + 1.3 * press)}" stroke-linecap="round"/>`,
    );
  }
  parts.push(
    `<circle cx="${f1(lx - 1)}" cy="${f1(cy)}" r="1.8" fill="${c.skinShade}" opacity="0.7"/>`,
    `<circle cx="${f1(rx + 1)}" cy="${f1(cy)}" r="1.8" fill="${c.skinShade}" opacity="0.7"/>`,
  );
  if (press > 0.3) {
    // Pressed lips push the skin below them: a faint crease.
    parts.push(
      `<path d="M${f1(x - 10)} ${f1(yl + 5)} Q${x} ${f1(yl + 7)} ${f1(x + 10)} ${
        f1(yl + 5)
      }" fill="none" stroke="${c.skinShade}" stroke-width="1.6" opacity="${
        f1(0.6 * press)
      }" stroke-linecap="round"/>`,
    );
  }
  return parts.join("");
}

function clamp(v: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, v));
}

function clamp01(v: number): number {
  return clamp(v, 0, 1);
}
