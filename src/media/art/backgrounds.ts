/**
 * The backgrounds, drawn by the project as SVG (512×512 view box, scaled to cover the output).
 *
 * @module
 */

const svg = (body: string, defs: string) =>
  `<svg xmlns="http://www.w3.org/2000/svg" width="512" height="512" viewBox="0 0 512 512" preserveAspectRatio="xMidYMid slice"><defs>${defs}</defs>${body}</svg>`;

/** A soft studio backdrop with a spotlight. */
export function studioSvg(): string {
  return svg(
    `<rect width="512" height="512" fill="url(#bg)"/>
     <ellipse cx="256" cy="230" rx="230" ry="200" fill="url(#spot)"/>
     <rect y="420" width="512" height="92" fill="#000" opacity="0.12"/>`,
    `<radialGradient id="bg" cx="0.5" cy="0.4" r="0.8"><stop offset="0" stop-color="#60778c"/><stop offset="1" stop-color="#1c2733"/></radialGradient>
     <radialGradient id="spot"><stop offset="0" stop-color="#ffffff" stop-opacity="0.18"/><stop offset="1" stop-color="#ffffff" stop-opacity="0"/></radialGradient>`,
  );
}

/** A sunset over hills. */
export function sunsetSvg(): string {
  return svg(
    `<rect width="512" height="512" fill="url(#sky)"/>
     <circle cx="392" cy="300" r="64" fill="#ffd98a"/>
     <circle cx="392" cy="300" r="96" fill="#ffd98a" opacity="0.18"/>
     <path d="M0 330 C90 280 170 300 250 320 C330 340 420 290 512 310 L512 512 L0 512 Z" fill="#7a4a82"/>
     <path d="M0 390 C110 350 200 380 290 392 C380 404 440 370 512 380 L512 512 L0 512 Z" fill="#4d2f63"/>
     <path d="M0 450 C120 430 260 460 512 440 L512 512 L0 512 Z" fill="#2c1c40"/>`,
    `<linearGradient id="sky" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="#3b3270"/>
       <stop offset="0.45" stop-color="#d8627a"/><stop offset="0.75" stop-color="#ffa26b"/></linearGradient>`,
  );
}

/** An office wall with a window, a shelf and a plant. */
export function officeSvg(): string {
  const books = [["#b84a3e", 30], ["#3e6fb8", 22], ["#e0b040", 26], ["#4a9a6a", 18], ["#8a5ab0", 28]]
    .map(([c, w], i, a) => {
      const x = 372 + a.slice(0, i).reduce((s, [, ww]) => s + Number(ww) + 3, 0);
      return `<rect x="${x}" y="${140 - Number(w) * 0.6}" width="${w}" height="${
        56 + Number(w) * 0.6
      }" fill="${c}"/>`;
    }).join("");
  return svg(
    `<rect width="512" height="512" fill="url(#wall)"/>
     <rect x="36" y="60" width="170" height="210" fill="url(#win)" stroke="#f4f1ea" stroke-width="10"/>
     <path d="M121 60 L121 270 M36 165 L206 165" stroke="#f4f1ea" stroke-width="8"/>
     <rect x="362" y="196" width="150" height="10" fill="#7a5a3c"/>
     ${books}
     <rect x="408" y="330" width="64" height="70" rx="6" fill="#b86b45"/>
     <ellipse cx="440" cy="318" rx="22" ry="40" fill="#3f8a4e"/>
     <ellipse cx="414" cy="326" rx="16" ry="34" fill="#4f9e5c" transform="rotate(-25 414 326)"/>
     <ellipse cx="466" cy="326" rx="16" ry="34" fill="#35764a" transform="rotate(25 466 326)"/>
     <rect y="440" width="512" height="72" fill="#8f7a66"/>`,
    `<linearGradient id="wall" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="#e6e0d4"/><stop offset="1" stop-color="#c9c0b0"/></linearGradient>
     <linearGradient id="win" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="#8ec5f0"/><stop offset="1" stop-color="#d9eefc"/></linearGradient>`,
  );
}

/** What the `transparent` background is drawn as where there is no alpha (video): chroma-key green. */
export const TRANSPARENT_FALLBACK = "#00b140";

/** The `transparent` background in a video frame: a plain {@link TRANSPARENT_FALLBACK}. */
export function transparentFallbackSvg(): string {
  return svg(`<rect width="512" height="512" fill="${TRANSPARENT_FALLBACK}"/>`, "");
}
