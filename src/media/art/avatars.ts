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
import { mouthElements, type MouthPose } from "./mouth.ts";

/** Eye states used for blinking. */
export const EYE_STATES = ["open", "half", "closed"] as const;
/** One eye state. */
export type EyeState = (typeof EYE_STATES)[number];

/** Looks of the eyes and brows: talking or idle, listening to the user, thinking before answering. */
export const LOOKS = ["neutral", "listening", "thinking"] as const;
/** One look. */
export type Look = (typeof LOOKS)[number];

/** The look of one avatar. */
export interface AvatarStyle {
  skin: string;
  skinShade: string;
  lips: string;
  hair: string;
  hairStyle: "bob" | "short" | "curly";
  iris: string;
  brows: string;
  shirt: string;
  shirtShade: string;
  glasses: boolean;
  freckles: boolean;
}

const VIEW = `viewBox="0 0 512 512"`;
const svg = (body: string, defs = "") =>
  `<svg xmlns="http://www.w3.org/2000/svg" width="512" height="512" ${VIEW}><defs>${defs}</defs>${body}</svg>`;

const EYE_Y = 230;
const EYES_X = [214, 298];

/** The torso and neck (never moves). */
export function bodySvg(s: AvatarStyle): string {
  const defs = `<linearGradient id="shirt" x1="0" y1="0" x2="0" y2="1">
    <stop offset="0" stop-color="${s.shirt}"/><stop offset="1" stop-color="${s.shirtShade}"/></linearGradient>`;
  return svg(
    `<path d="M226 300 L226 420 L286 420 L286 300 Z" fill="${s.skinShade}"/>
     <path d="M226 372 Q256 392 286 372 L286 420 L226 420 Z" fill="${s.skinShade}" opacity="0.6"/>
     <path d="M60 512 C64 452 104 420 170 404 C196 398 214 394 226 388 Q256 420 286 388 C298 394 316 398 342 404
              C408 420 448 452 452 512 Z" fill="url(#shirt)"/>
     <path d="M226 388 Q256 430 286 388" fill="none" stroke="${s.shirtShade}" stroke-width="6" stroke-linecap="round"/>
     <path d="M150 470 Q160 440 176 430" fill="none" stroke="${s.shirtShade}" stroke-width="4" opacity="0.5"/>
     <path d="M362 470 Q352 440 336 430" fill="none" stroke="${s.shirtShade}" stroke-width="4" opacity="0.5"/>`,
    defs,
  );
}

function hairBack(s: AvatarStyle): string {
  switch (s.hairStyle) {
    case "bob":
      return `<path d="M140 240 C128 130 196 84 260 86 C332 88 392 138 374 250 C370 300 372 338 352 352
                       L330 300 L190 300 L160 352 C140 336 144 296 140 240 Z" fill="${s.hair}"/>`;
    case "curly":
      return [0, 1, 2, 3, 4, 5, 6, 7, 8].map((i) => {
        const a = Math.PI * (0.95 + i * 0.1375);
        return `<circle cx="${256 + 118 * Math.cos(a)}" cy="${
          222 + 112 * Math.sin(a)
        }" r="40" fill="${s.hair}"/>`;
      }).join("");
    default:
      return "";
  }
}

function hairFront(s: AvatarStyle): string {
  switch (s.hairStyle) {
    case "bob":
      return `<path d="M158 206 C150 128 214 100 262 102 C322 104 366 140 356 210 C330 170 300 150 252 148
                       C214 150 184 170 158 206 Z" fill="${s.hair}"/>
              <path d="M200 150 C230 140 270 138 300 146" fill="none" stroke="#ffffff" stroke-opacity="0.12" stroke-width="6"/>`;
    case "short":
      return `<path d="M160 200 C152 128 212 96 262 98 C318 100 364 132 354 202 C344 176 330 160 318 156
                       C290 170 240 164 212 150 C190 160 170 178 160 200 Z" fill="${s.hair}"/>`;
    case "curly":
      return [0, 1, 2, 3, 4, 5].map((i) =>
        `<circle cx="${186 + i * 28}" cy="${138 + (i % 2) * 10}" r="30" fill="${s.hair}"/>`
      ).join("") +
        `<circle cx="166" cy="176" r="24" fill="${s.hair}"/><circle cx="346" cy="176" r="24" fill="${s.hair}"/>`;
  }
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
  const glasses = s.glasses
    ? `<g fill="none" stroke="#1d1d24" stroke-width="5">
         <rect x="${EYES_X[0] - 34}" y="${EYE_Y - 24}" width="68" height="48" rx="14"/>
         <rect x="${EYES_X[1] - 34}" y="${EYE_Y - 24}" width="68" height="48" rx="14"/>
         <path d="M${EYES_X[0] + 34} ${EYE_Y - 6} Q256 ${EYE_Y - 16} ${EYES_X[1] - 34} ${EYE_Y - 6}"/>
         <path d="M${EYES_X[0] - 34} ${EYE_Y - 8} L164 ${EYE_Y - 14}"/><path d="M${EYES_X[1] + 34} ${
      EYE_Y - 8
    } L348 ${EYE_Y - 14}"/>
       </g>`
    : "";
  return svg(
    `${hairBack(s)}
     <ellipse cx="160" cy="250" rx="16" ry="26" fill="${s.skinShade}"/>
     <ellipse cx="352" cy="250" rx="16" ry="26" fill="${s.skinShade}"/>
     <path d="M160 220 C160 118 352 118 352 220 C352 302 310 360 256 362 C202 360 160 302 160 220 Z" fill="url(#face)"/>
     <ellipse cx="206" cy="282" rx="22" ry="12" fill="#e0707a" opacity="0.18"/>
     <ellipse cx="306" cy="282" rx="22" ry="12" fill="#e0707a" opacity="0.18"/>
     ${freckles}
     <path d="M256 ${EYE_Y + 12} C252 ${EYE_Y + 30} 244 ${EYE_Y + 44} 248 ${EYE_Y + 50} Q256 ${
      EYE_Y + 54
    } 266 ${EYE_Y + 49}"
           fill="none" stroke="${s.skinShade}" stroke-width="4" stroke-linecap="round"/>
     ${hairFront(s)}
     ${glasses}`,
    defs,
  );
}

/** Where the eyes look and how the brows sit, per look: iris offset, brow lift (left, right). */
const LOOK_POSE: Record<Look, { gx: number; gy: number; browL: number; browR: number; browTilt: number }> = {
  neutral: { gx: 1, gy: 1, browL: 0, browR: 0, browTilt: 0 },
  listening: { gx: 0, gy: 1.5, browL: 3, browR: 3, browTilt: 1.5 },
  thinking: { gx: 5, gy: -4, browL: 6, browR: -1, browTilt: -1 },
};

function eye(s: AvatarStyle, x: number, state: EyeState, look: Look): string {
  const y = EYE_Y;
  const { gx, gy } = LOOK_POSE[look];
  const lash = `stroke="#22181a" stroke-width="3.5" stroke-linecap="round" fill="none"`;
  if (state === "closed") {
    return `<path d="M${x - 19} ${y + 1} Q${x} ${y + 10} ${x + 19} ${y + 1}" ${lash}/>`;
  }
  const open = `<ellipse cx="${x}" cy="${y}" rx="19" ry="12" fill="#fbfbf8"/>
    <clipPath id="eye${x}"><ellipse cx="${x}" cy="${y}" rx="19" ry="12"/></clipPath>
    <g clip-path="url(#eye${x})">
    <circle cx="${x + gx}" cy="${y + gy}" r="9.5" fill="${s.iris}"/>
    <circle cx="${x + gx}" cy="${y + gy}" r="4.6" fill="#0d0d10"/>
    <circle cx="${x + gx + 3}" cy="${y + gy - 4}" r="2.6" fill="#ffffff"/></g>`;
  if (state === "half") {
    return `${open}<path d="M${x - 21} ${y + 1} L${x - 21} ${y - 14} L${x + 21} ${y - 14} L${x + 21} ${y + 1}
      Q${x} ${y + 6} ${x - 21} ${y + 1} Z" fill="${s.skin}"/>
      <path d="M${x - 19} ${y + 1} Q${x} ${y + 6} ${x + 19} ${y + 1}" ${lash}/>`;
  }
  return `${open}<path d="M${x - 20} ${y + 1} Q${x} ${y - 17} ${x + 20} ${y + 1}" ${lash}/>`;
}

function brows(s: AvatarStyle, look: Look): string {
  const { browL, browR, browTilt } = LOOK_POSE[look];
  const stroke = `fill="none" stroke="${s.brows}" stroke-width="7" stroke-linecap="round"`;
  const y = EYE_Y - 30;
  // browTilt lifts the inner ends (worried/attentive) or lowers them (concentration).
  return `<path d="M190 ${y - browL} Q214 ${y - 12 - browL} 240 ${y - browL - browTilt}" ${stroke}/>
     <path d="M272 ${y - browR - browTilt} Q298 ${y - 12 - browR} 322 ${y - browR}" ${stroke}/>`;
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
