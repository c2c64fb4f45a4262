/**
 * The rig of an uploaded avatar drawing (docs/avatars.md#the-rig): what the service animates in it.
 *
 * - the root `<svg>` has a `viewBox` (any aspect; the drawing is fitted to the square frame);
 * - `id="mouth"` (a `rect` or `ellipse`, required) marks where the 15 viseme mouths are drawn, scaled to its
 *   box, in the lip colour of its `fill` (`#rgb` or `#rrggbb`); the element itself is not drawn;
 * - `<g id="eyes-open">` and `<g id="eyes-closed">` (optional; closed needs open): the second is shown
 *   instead of the first during blinks;
 * - `<g id="brows">` (optional): lifted a little when the avatar listens or thinks;
 * - `<g id="head">` (optional): moves with the head's small motion, with the eyes, brows and mouth.
 *
 * The rig's elements and their ancestors carry no `transform` (their boxes are read in the viewBox's
 * coordinates). Pure code.
 *
 * @module
 */
import { SvgRefusal } from "./refusal.ts";
import type { SvgElement } from "./sanitise.ts";

/** What the service animates in a drawing. */
export interface SvgRig {
  /** The root's viewBox: x, y, width, height. */
  viewBox: [number, number, number, number];
  /** The mouth's box in viewBox coordinates. */
  mouth: { x: number; y: number; width: number; height: number };
  /** The lips' colour (#rrggbb). */
  lips: string;
  /** Ids present among the optional ones. */
  eyesOpen: boolean;
  eyesClosed: boolean;
  brows: boolean;
  head: boolean;
}

/** The ids of the rig. */
export const RIG_IDS = ["mouth", "eyes-open", "eyes-closed", "brows", "head"] as const;

const DEFAULT_LIPS = "#b8606a";

function num(el: SvgElement, name: string, fallback?: number): number {
  const raw = el.attrs.get(name);
  if (raw === undefined && fallback !== undefined) return fallback;
  const v = Number((raw ?? "").trim().replace(/px$/, ""));
  if (raw === undefined || !Number.isFinite(v)) {
    throw new SvgRefusal(`the rig's #mouth needs a numeric ${name} (user units, no %)`);
  }
  return v;
}

function fillOf(el: SvgElement): string | undefined {
  const style = el.attrs.get("style") ?? "";
  for (const decl of style.split(";")) {
    const [k, v] = decl.split(":");
    if (k?.trim() === "fill" && v) return v.trim();
  }
  return el.attrs.get("fill")?.trim();
}

function hexColour(c: string | undefined): string {
  if (!c) return DEFAULT_LIPS;
  if (/^#[0-9a-f]{6}$/i.test(c)) return c.toLowerCase();
  if (/^#[0-9a-f]{3}$/i.test(c)) return `#${[...c.slice(1)].map((d) => d + d).join("")}`.toLowerCase();
  throw new SvgRefusal(`the rig's #mouth fill "${c}" must be #rgb or #rrggbb (it is the lips' colour)`);
}

/** Finds every element with each rig id, with its ancestors. */
function findIds(root: SvgElement): Map<string, { el: SvgElement; path: SvgElement[] }[]> {
  const found = new Map<string, { el: SvgElement; path: SvgElement[] }[]>();
  const walk = (el: SvgElement, path: SvgElement[]) => {
    const id = el.attrs.get("id");
    if (id && (RIG_IDS as readonly string[]).includes(id)) {
      found.set(id, [...(found.get(id) ?? []), { el, path }]);
    }
    for (const c of el.children) if (typeof c !== "string") walk(c, [...path, el]);
  };
  walk(root, []);
  return found;
}

/**
 * Reads and checks the rig of a sanitised drawing; throws {@link SvgRefusal} naming what is wrong.
 *
 * @example Usage
 * ```ts
 * import { sanitiseSvg } from "./sanitise.ts";
 * import { readRig } from "./rig.ts";
 * const { root } = sanitiseSvg(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 100"><rect id="mouth" x="40" y="60" width="20" height="10" fill="#a03040"/></svg>`);
 * readRig(root).lips; // "#a03040"
 * ```
 */
export function readRig(root: SvgElement): SvgRig {
  const vb = (root.attrs.get("viewBox") ?? "").trim().split(/[\s,]+/).map(Number);
  if (vb.length !== 4 || vb.some((v) => !Number.isFinite(v)) || vb[2] <= 0 || vb[3] <= 0) {
    throw new SvgRefusal(
      'the root <svg> needs a viewBox="x y width height" with a positive width and height',
    );
  }
  if (vb[2] / vb[3] > 20 || vb[3] / vb[2] > 20) throw new SvgRefusal("the viewBox's aspect is over 20:1");
  const ids = findIds(root);
  for (const [id, list] of ids) {
    if (list.length > 1) throw new SvgRefusal(`the rig's id "${id}" is used ${list.length} times`);
    const { el, path } = list[0];
    for (const e of [el, ...path.slice(1)]) {
      if (e.attrs.has("transform")) {
        throw new SvgRefusal(
          `the rig's #${id} (or an element around it) has a transform: the rig needs none`,
        );
      }
    }
    if (path.some((p) => ["defs", "symbol", "clipPath", "mask", "pattern"].includes(p.name))) {
      throw new SvgRefusal(`the rig's #${id} is inside <${path.find((p) => p.name !== "svg")?.name}>`);
    }
    if (id !== "mouth" && el.name !== "g") throw new SvgRefusal(`the rig's #${id} must be a <g>`);
  }
  const mouthEntry = ids.get("mouth")?.[0];
  if (!mouthEntry) throw new SvgRefusal('the rig needs an element with id="mouth" (a rect or an ellipse)');
  const m = mouthEntry.el;
  let mouth: SvgRig["mouth"];
  if (m.name === "rect") {
    mouth = { x: num(m, "x", 0), y: num(m, "y", 0), width: num(m, "width"), height: num(m, "height") };
  } else if (m.name === "ellipse") {
    const cx = num(m, "cx", 0), cy = num(m, "cy", 0), rx = num(m, "rx"), ry = num(m, "ry");
    mouth = { x: cx - rx, y: cy - ry, width: 2 * rx, height: 2 * ry };
  } else {
    throw new SvgRefusal(`the rig's #mouth must be a <rect> or an <ellipse>, not <${m.name}>`);
  }
  if (!(mouth.width > 0 && mouth.height > 0)) throw new SvgRefusal("the rig's #mouth has no area");
  const inside = mouth.x >= vb[0] && mouth.y >= vb[1] && mouth.x + mouth.width <= vb[0] + vb[2] &&
    mouth.y + mouth.height <= vb[1] + vb[3];
  if (!inside) throw new SvgRefusal("the rig's #mouth is not inside the viewBox");
  if (ids.has("eyes-closed") && !ids.has("eyes-open")) {
    throw new SvgRefusal('the rig\'s #eyes-closed needs a <g id="eyes-open"> to alternate with');
  }
  return {
    viewBox: vb as [number, number, number, number],
    mouth,
    lips: hexColour(fillOf(m)),
    eyesOpen: ids.has("eyes-open"),
    eyesClosed: ids.has("eyes-closed"),
    brows: ids.has("brows"),
    head: ids.has("head"),
  };
}
