/**
 * A customer's drawing with every rig id, for tests of drawings as avatar layers.
 *
 * @module
 */

/** A 200×100 drawing (wide: fitted with bands above and below), every rig id used. */
export const RIGGED = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 200 100">
  <defs><linearGradient id="sky"><stop offset="0" stop-color="#2040c0"/></linearGradient></defs>
  <rect id="ground" x="0" y="80" width="200" height="20" fill="url(#sky)"/>
  <g id="head" fill="#20c040">
    <circle cx="100" cy="45" r="35"/>
    <g id="eyes-open"><circle cx="88" cy="38" r="5" fill="#ffffff"/><circle cx="112" cy="38" r="5" fill="#ffffff"/></g>
    <g id="eyes-closed"><rect x="82" y="37" width="12" height="2" fill="#000000"/><rect x="106" y="37" width="12" height="2" fill="#000000"/></g>
    <g id="brows"><rect x="82" y="28" width="12" height="3" fill="#402010"/></g>
    <rect id="mouth" x="90" y="55" width="20" height="10" fill="#d02030"/>
  </g>
</svg>`;
