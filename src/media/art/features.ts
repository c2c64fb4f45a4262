/**
 * The parts that make a project's avatars different people rather than recolours of one drawing: face
 * outlines, hair silhouettes (behind and in front of the face), facial hair, glasses, accessories and
 * clothing cuts. Each is a pure function from the avatar's look to SVG elements on the 512×512 view box;
 * `avatars.ts` puts them into its layers. The default choices (oval face, tshirt, …) draw exactly what the
 * stock avatars drew before styles existed.
 *
 * @module
 */
import type {
  ACCESSORIES,
  BROW_STYLES,
  CLOTHING_STYLES,
  EYE_SHAPES,
  FACE_SHAPES,
  FACIAL_HAIR,
  GLASSES,
  HAIR_STYLES,
} from "../../vocabulary/avatar_style.ts";

/** The look of one avatar, as the art draws it (stock avatars and style avatars alike). */
export interface AvatarLook {
  faceShape: (typeof FACE_SHAPES)[number];
  skin: string;
  skinShade: string;
  lips: string;
  hair: string;
  hairStyle: (typeof HAIR_STYLES)[number];
  eyeShape: (typeof EYE_SHAPES)[number];
  iris: string;
  browStyle: (typeof BROW_STYLES)[number];
  brows: string;
  glasses: (typeof GLASSES)[number];
  facialHair: (typeof FACIAL_HAIR)[number];
  freckles: boolean;
  clothingStyle: (typeof CLOTHING_STYLES)[number];
  shirt: string;
  shirtShade: string;
  accessory: (typeof ACCESSORIES)[number];
  accessoryColor: string;
}

/** The eyes' height and centres on the view box. */
export const EYE_Y = 230;
/** The eyes' horizontal centres. */
export const EYES_X = [214, 298];

/** Each face shape's outline and the distance of its ears from the centre line. */
const FACES: Record<AvatarLook["faceShape"], { path: string; ear: number }> = {
  oval: {
    path: "M160 220 C160 118 352 118 352 220 C352 302 310 360 256 362 C202 360 160 302 160 220 Z",
    ear: 96,
  },
  round: {
    path: "M152 232 C152 110 360 110 360 232 C360 320 320 364 256 364 C192 364 152 320 152 232 Z",
    ear: 104,
  },
  square: {
    path: "M158 206 C158 116 354 116 354 206 L352 298 C350 342 318 362 256 364 C194 362 162 342 160 298 Z",
    ear: 98,
  },
  heart: {
    path: "M154 212 C150 108 362 108 358 212 C356 284 306 352 256 370 C206 352 156 284 154 212 Z",
    ear: 100,
  },
};

/** The face's outline (filled by the caller) and its ears. */
export function faceOutline(s: AvatarLook): { path: string; ears: string } {
  const f = FACES[s.faceShape];
  const ears = [256 - f.ear, 256 + f.ear]
    .map((x) => `<ellipse cx="${x}" cy="250" rx="16" ry="26" fill="${s.skinShade}"/>`).join("");
  return { path: f.path, ears };
}

/** Hair drawn behind the face (and the ears). */
export function hairBack(s: AvatarLook): string {
  const h = s.hair;
  switch (s.hairStyle) {
    case "bob":
      return `<path d="M140 240 C128 130 196 84 260 86 C332 88 392 138 374 250 C370 300 372 338 352 352
                       L330 300 L190 300 L160 352 C140 336 144 296 140 240 Z" fill="${h}"/>`;
    case "curly":
      return [0, 1, 2, 3, 4, 5, 6, 7, 8].map((i) => {
        const a = Math.PI * (0.95 + i * 0.1375);
        return `<circle cx="${256 + 118 * Math.cos(a)}" cy="${222 + 112 * Math.sin(a)}" r="40" fill="${h}"/>`;
      }).join("");
    case "long":
      return `<path d="M142 236 C124 122 198 80 258 82 C330 84 396 126 372 236 L388 426 C346 446 306 436 292 414
                       L290 330 L222 330 L220 414 C206 436 166 446 124 426 Z" fill="${h}"/>`;
    case "bun":
      return `<circle cx="256" cy="92" r="42" fill="${h}"/>
              <path d="M232 120 Q256 130 280 120" fill="none" stroke="#000" stroke-opacity="0.2" stroke-width="4"/>`;
    case "afro":
      return `<ellipse cx="256" cy="190" rx="170" ry="150" fill="${h}"/>
              <ellipse cx="256" cy="190" rx="150" ry="130" fill="#000" opacity="0.08"/>`;
    default:
      return "";
  }
}

/** Hair drawn over the face (fringes, hairlines). */
export function hairFront(s: AvatarLook): string {
  const h = s.hair;
  switch (s.hairStyle) {
    case "bob":
      return `<path d="M158 206 C150 128 214 100 262 102 C322 104 366 140 356 210 C330 170 300 150 252 148
                       C214 150 184 170 158 206 Z" fill="${h}"/>
              <path d="M200 150 C230 140 270 138 300 146" fill="none" stroke="#ffffff" stroke-opacity="0.12" stroke-width="6"/>`;
    case "short":
      return `<path d="M160 200 C152 128 212 96 262 98 C318 100 364 132 354 202 C344 176 330 160 318 156
                       C290 170 240 164 212 150 C190 160 170 178 160 200 Z" fill="${h}"/>`;
    case "curly":
      return [0, 1, 2, 3, 4, 5].map((i) =>
        `<circle cx="${186 + i * 28}" cy="${138 + (i % 2) * 10}" r="30" fill="${h}"/>`
      ).join("") +
        `<circle cx="166" cy="176" r="24" fill="${h}"/><circle cx="346" cy="176" r="24" fill="${h}"/>`;
    case "long":
      return `<path d="M156 222 C148 124 214 94 262 96 C326 98 370 136 358 230 C344 172 300 140 236 146
                       C202 152 172 184 156 222 Z" fill="${h}"/>`;
    case "bun":
      return `<path d="M160 196 C156 124 214 104 258 104 C314 104 360 128 352 196 C330 156 296 140 256 140
                       C216 140 182 156 160 196 Z" fill="${h}"/>
              <path d="M214 118 Q256 108 298 118" fill="none" stroke="#ffffff" stroke-opacity="0.14" stroke-width="5"/>`;
    case "buzz":
      return `<path d="M164 196 C160 132 214 112 258 112 C306 112 354 132 348 196 C336 166 300 152 256 152
                       C212 152 178 166 164 196 Z" fill="${h}" opacity="0.78"/>`;
    case "afro":
      return [0, 1, 2, 3, 4, 5, 6].map((i) =>
        `<circle cx="${178 + i * 26}" cy="${
          150 - Math.round(14 * Math.sin((i / 6) * Math.PI))
        }" r="26" fill="${h}"/>`
      ).join("");
    case "bald":
      return `<ellipse cx="228" cy="158" rx="30" ry="12" fill="#ffffff" opacity="0.16" transform="rotate(-14 228 158)"/>`;
  }
}

/** Facial hair over the lower face (under the mouth layer, which is drawn on top). */
export function facialHair(s: AvatarLook): string {
  const h = s.hair;
  const mustache =
    `<path d="M220 300 C232 284 250 288 256 294 C262 288 280 284 292 300 C278 296 266 300 256 303
                       C246 300 234 296 220 300 Z" fill="${h}"/>`;
  switch (s.facialHair) {
    case "none":
      return "";
    case "stubble":
      return `<path d="M176 282 C182 338 220 366 256 366 C292 366 330 338 336 282 C322 320 296 340 256 340
                       C216 340 190 320 176 282 Z M224 296 Q256 284 288 296 Q256 292 224 296 Z" fill="${h}" opacity="0.28"/>`;
    case "mustache":
      return mustache;
    case "goatee":
      return `${mustache}<path d="M236 340 Q256 334 276 340 L270 364 Q256 374 242 364 Z" fill="${h}"/>`;
    case "beard":
      return `<path d="M168 260 C170 332 212 376 256 378 C300 376 342 332 344 260 C336 308 312 334 292 338
                       C278 320 234 320 220 338 C200 334 176 308 168 260 Z" fill="${h}"/>${mustache}`;
  }
}

/** Glasses over the eyes. */
export function glasses(s: AvatarLook): string {
  if (s.glasses === "none") return "";
  const [l, r] = EYES_X, y = EYE_Y;
  const lenses = s.glasses === "round"
    ? `<circle cx="${l}" cy="${y}" r="28"/><circle cx="${r}" cy="${y}" r="28"/>`
    : `<rect x="${l - 34}" y="${y - 24}" width="68" height="48" rx="14"/>
       <rect x="${r - 34}" y="${y - 24}" width="68" height="48" rx="14"/>`;
  const half = s.glasses === "round" ? 28 : 34;
  return `<g fill="none" stroke="#1d1d24" stroke-width="5">${lenses}
    <path d="M${l + half} ${y - 6} Q256 ${y - 16} ${r - half} ${y - 6}"/>
    <path d="M${l - half} ${y - 8} L164 ${y - 14}"/><path d="M${r + half} ${y - 8} L348 ${y - 14}"/></g>`;
}

/** The accessory, drawn over the head and hair. */
export function accessory(s: AvatarLook): string {
  const c = s.accessoryColor;
  const ear = FACES[s.faceShape].ear;
  switch (s.accessory) {
    case "none":
      return "";
    case "earrings":
      return [256 - ear, 256 + ear].map((x) =>
        `<circle cx="${x}" cy="284" r="8" fill="none" stroke="${c}" stroke-width="3.5"/>
         <circle cx="${x}" cy="276" r="3" fill="${c}"/>`
      ).join("");
    case "hat":
      return `<path d="M150 186 C140 70 372 70 362 186 Z" fill="${c}"/>
              <path d="M146 168 Q256 148 366 168 L366 190 Q256 170 146 190 Z" fill="#000" opacity="0.22"/>
              <circle cx="256" cy="78" r="20" fill="${c}"/>`;
    case "headset":
      return `<path d="M${256 - ear + 2} 236 C150 104 362 104 ${
        256 + ear - 2
      } 236" fill="none" stroke="#2a2a30" stroke-width="10"/>
              <rect x="${256 - ear - 14}" y="224" width="28" height="52" rx="11" fill="${c}"/>
              <rect x="${256 + ear - 14}" y="224" width="28" height="52" rx="11" fill="${c}"/>
              <path d="M${256 - ear} 268 Q${
        256 - ear + 10
      } 326 204 332" fill="none" stroke="#2a2a30" stroke-width="5"/>
              <circle cx="202" cy="332" r="7" fill="#2a2a30"/>`;
  }
}

/** The torso: one clothing cut over the shoulders (the neck is the caller's). */
export function clothing(s: AvatarLook): string {
  const shoulders =
    `M60 512 C64 452 104 420 170 404 C196 398 214 394 226 388 Q256 420 286 388 C298 394 316 398 342 404
              C408 420 448 452 452 512 Z`;
  const folds =
    `<path d="M150 470 Q160 440 176 430" fill="none" stroke="${s.shirtShade}" stroke-width="4" opacity="0.5"/>
     <path d="M362 470 Q352 440 336 430" fill="none" stroke="${s.shirtShade}" stroke-width="4" opacity="0.5"/>`;
  switch (s.clothingStyle) {
    case "tshirt":
      return `<path d="${shoulders}" fill="url(#shirt)"/>
     <path d="M226 388 Q256 430 286 388" fill="none" stroke="${s.shirtShade}" stroke-width="6" stroke-linecap="round"/>
     ${folds}`;
    case "hoodie":
      return `<path d="${shoulders}" fill="url(#shirt)"/>
     <path d="M170 412 C176 372 214 376 256 398 C298 376 336 372 342 412 C318 432 290 420 256 432 C222 420 194 432 170 412 Z"
           fill="${s.shirtShade}"/>
     <path d="M240 428 L236 476 M272 428 L276 476" stroke="#f2f0ea" stroke-width="4" stroke-linecap="round"/>
     <rect x="196" y="470" width="120" height="42" rx="10" fill="${s.shirtShade}" opacity="0.45"/>${folds}`;
    case "blazer":
      return `<path d="${shoulders}" fill="#f2f0ea"/>
     <path d="M226 388 L256 418 L286 388" fill="none" stroke="#d8d4ca" stroke-width="4"/>
     <path d="M60 512 C64 452 104 420 170 404 C196 398 214 394 226 388 L246 462 L238 512 Z" fill="url(#shirt)"/>
     <path d="M452 512 C448 452 408 420 342 404 C316 398 298 394 286 388 L266 462 L274 512 Z" fill="url(#shirt)"/>
     <path d="M226 388 L206 430 L246 462 M286 388 L306 430 L266 462" fill="none" stroke="${s.shirtShade}" stroke-width="5"
           stroke-linejoin="round"/>
     <circle cx="256" cy="490" r="5" fill="${s.shirtShade}"/>${folds}`;
  }
}
