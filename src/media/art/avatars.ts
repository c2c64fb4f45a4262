/**
 * The avatars, drawn by the project as SVG (no downloaded assets). Every avatar is one parametric face
 * split into layers so a renderer can animate it cheaply: a static `body`, a `head` that moves (small head
 * motion), the eyes and brows (open, half, closed: blinks; neutral, listening, thinking: looks) and the
 * mouth (any blend of the 15 visemes, `mouth.ts`).
 *
 * All layers share a 512×512 view box; the server's rasteriser scales them to the output size. These are
 * pure functions returning SVG text, so a browser that draws the avatar itself uses this same module.
 *
 * @module
 */
import {
  accessory,
  type AvatarLook,
  clothing,
  EYE_Y,
  EYES_X,
  faceOutline,
  facialHair,
  glasses,
  hairBack,
  hairFront,
} from "./features.ts";
import { mouthElements, type MouthPose } from "./mouth.ts";

/** Eye states used for blinking. */
export const EYE_STATES = ["open", "half", "closed"] as const;
/** One eye state. */
export type EyeState = (typeof EYE_STATES)[number];

/** Looks of the eyes and brows: talking or idle, listening to the user, thinking before answering. */
export const LOOKS = ["neutral", "listening", "thinking"] as const;
/** One look. */
export type Look = (typeof LOOKS)[number];

/** The look of one avatar (see `features.ts`). */
export type AvatarStyle = AvatarLook;

const VIEW = `viewBox="0 0 512 512"`;
const svg = (body: string, defs = "") =>
  `<svg xmlns="http://www.w3.org/2000/svg" width="512" height="512" ${VIEW}><defs>${defs}</defs>${body}</svg>`;

/** The torso and neck (never moves). */
export function bodySvg(s: AvatarStyle): string {
  const defs = `<linearGradient id="shirt" x1="0" y1="0" x2="0" y2="1">
    <stop offset="0" stop-color="${s.shirt}"/><stop offset="1" stop-color="${s.shirtShade}"/></linearGradient>`;
  return svg(
    `<path d="M226 300 L226 420 L286 420 L286 300 Z" fill="${s.skinShade}"/>
     <path d="M226 372 Q256 392 286 372 L286 420 L226 420 Z" fill="${s.skinShade}" opacity="0.6"/>
     ${clothing(s)}`,
    defs,
  );
}

/** The head (face without eyes, brows and mouth; ears, hair, nose): moves with the head motion. */
export function headSvg(s: AvatarStyle): string {
  const defs = `<radialGradient id="face" cx="0.45" cy="0.4" r="0.7">
      <stop offset="0" stop-color="${s.skin}"/><stop offset="1" stop-color="${s.skinShade}"/></radialGradient>`;
  const freckles = s.freckles
    ? [[-52, 262], [-40, 270], [-60, 272], [-46, 280], [52, 262], [40, 270], [60, 272], [46, 280]]
      .map(([dx, y]) => `<circle cx="${256 + dx}" cy="${y}" r="2.2" fill="${s.skinShade}" opacity="0.8"/>`)
      .join("")
    : "";
  const face = faceOutline(s);
  return svg(
    `${hairBack(s)}
     ${face.ears}
     <path d="${face.path}" fill="url(#face)"/>
     <ellipse cx="206" cy="282" rx="22" ry="12" fill="#e0707a" opacity="0.18"/>
     <ellipse cx="306" cy="282" rx="22" ry="12" fill="#e0707a" opacity="0.18"/>
     ${freckles}
     <path d="M256 ${EYE_Y + 12} C252 ${EYE_Y + 30} 244 ${EYE_Y + 44} 248 ${EYE_Y + 50} Q256 ${
      EYE_Y + 54
    } 266 ${EYE_Y + 49}"
           fill="none" stroke="${s.skinShade}" stroke-width="4" stroke-linecap="round"/>
     ${facialHair(s)}
     ${hairFront(s)}
     ${glasses(s)}
     ${accessory(s)}`,
    defs,
  );
}

/** Where the eyes look and how the brows sit, per look: iris offset, brow lift (left, right). */
const LOOK_POSE: Record<Look, { gx: number; gy: number; browL: number; browR: number; browTilt: number }> = {
  neutral: { gx: 1, gy: 1, browL: 0, browR: 0, browTilt: 0 },
  listening: { gx: 0, gy: 1.5, browL: 3, browR: 3, browTilt: 1.5 },
  thinking: { gx: 5, gy: -4, browL: 6, browR: -1, browTilt: -1 },
};

/** The opening of each eye shape (half width, half height). */
const EYE_OPENING: Record<AvatarStyle["eyeShape"], { rx: number; ry: number }> = {
  almond: { rx: 19, ry: 12 },
  round: { rx: 16, ry: 14 },
  narrow: { rx: 20, ry: 8.5 },
};

function eye(s: AvatarStyle, x: number, state: EyeState, look: Look): string {
  const y = EYE_Y;
  const { gx, gy } = LOOK_POSE[look];
  const { rx, ry } = EYE_OPENING[s.eyeShape];
  const lash = `stroke="#22181a" stroke-width="3.5" stroke-linecap="round" fill="none"`;
  if (state === "closed") {
    return `<path d="M${x - rx} ${y + 1} Q${x} ${y + 10} ${x + rx} ${y + 1}" ${lash}/>`;
  }
  const open = `<ellipse cx="${x}" cy="${y}" rx="${rx}" ry="${ry}" fill="#fbfbf8"/>
    <clipPath id="eye${x}"><ellipse cx="${x}" cy="${y}" rx="${rx}" ry="${ry}"/></clipPath>
    <g clip-path="url(#eye${x})">
    <circle cx="${x + gx}" cy="${y + gy}" r="9.5" fill="${s.iris}"/>
    <circle cx="${x + gx}" cy="${y + gy}" r="4.6" fill="#0d0d10"/>
    <circle cx="${x + gx + 3}" cy="${y + gy - 4}" r="2.6" fill="#ffffff"/></g>`;
  if (state === "half") {
    return `${open}<path d="M${x - rx - 2} ${y + 1} L${x - rx - 2} ${y - ry - 2} L${x + rx + 2} ${
      y - ry - 2
    } L${x + rx + 2} ${y + 1}
      Q${x} ${y + 6} ${x - rx - 2} ${y + 1} Z" fill="${s.skin}"/>
      <path d="M${x - rx} ${y + 1} Q${x} ${y + 6} ${x + rx} ${y + 1}" ${lash}/>`;
  }
  return `${open}<path d="M${x - rx - 1} ${y + 1} Q${x} ${y - ry - 5} ${x + rx + 1} ${y + 1}" ${lash}/>`;
}

/** Each brow style: the arch's height and the stroke's width. */
const BROW_SHAPE: Record<AvatarStyle["browStyle"], { arch: number; width: number }> = {
  soft: { arch: 12, width: 7 },
  straight: { arch: 3, width: 7 },
  arched: { arch: 20, width: 5 },
  thick: { arch: 10, width: 11 },
};

function brows(s: AvatarStyle, look: Look): string {
  const { browL, browR, browTilt } = LOOK_POSE[look];
  const { arch, width } = BROW_SHAPE[s.browStyle];
  const stroke = `fill="none" stroke="${s.brows}" stroke-width="${width}" stroke-linecap="round"`;
  const y = EYE_Y - 30;
  // browTilt lifts the inner ends (worried/attentive) or lowers them (concentration).
  return `<path d="M190 ${y - browL} Q214 ${y - arch - browL} 240 ${y - browL - browTilt}" ${stroke}/>
     <path d="M272 ${y - browR - browTilt} Q298 ${y - arch - browR} 322 ${y - browR}" ${stroke}/>`;
}

/** Both eyes in one state and look, with the brows. */
export function eyesSvg(s: AvatarStyle, state: EyeState, look: Look = "neutral"): string {
  return svg(EYES_X.map((x) => eye(s, x, state, look)).join("") + brows(s, look));
}

/** The mouth in a pose (see `mouth.ts`: `blendPose` turns viseme weights into a pose). */
export function mouthSvg(s: AvatarStyle, pose: MouthPose): string {
  return svg(mouthElements({ lips: s.lips, skinShade: s.skinShade }, pose));
}

/** The inner elements of an `<svg>` document (what `svg()` wrapped), for composing layers into one. */
function inner(doc: string): string {
  return doc.replace(/^<svg[^>]*>/, "").replace(/<\/svg>$/, "");
}

/** The whole avatar in one SVG (for a browser, previews and the docs' contact sheet). */
export function faceSvg(
  s: AvatarStyle,
  face: { pose: MouthPose; eyes?: EyeState; look?: Look; headDx?: number; headDy?: number },
): string {
  const dx = face.headDx ?? 0, dy = face.headDy ?? 0;
  const moved = (doc: string) => `<g transform="translate(${dx} ${dy})">${inner(doc)}</g>`;
  return svg(
    inner(bodySvg(s)) + moved(headSvg(s)) + moved(eyesSvg(s, face.eyes ?? "open", face.look ?? "neutral")) +
      moved(mouthSvg(s, face.pose)),
  );
}
