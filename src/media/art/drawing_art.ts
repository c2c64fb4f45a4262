/**
 * The layers of a customer's rigged drawing (`avatar_svg/`: sanitised, rig read): the drawing fitted to the
 * 512×512 frame (centred, its aspect kept) and cut by the rig's ids into the same layers a stock avatar has:
 * the body (everything but the moving parts), the head group, the eye groups with the brows (lifted by the
 * looks, swapped for `eyes-closed` in blinks) and the 15 viseme mouths of `mouth.ts` scaled into the rig's
 * `#mouth` box in its lip colour. Every layer keeps the drawing's `<defs>` and `<style>` (ids resolve in
 * each). Pure code over the sanitised tree: nothing of the upload's text is used.
 *
 * @module
 */
import type { AcceptedSvg } from "../../avatar_svg/accept.ts";
import { serialiseSvg, type SvgElement } from "../../avatar_svg/sanitise.ts";
import type { AvatarLayers, ViewBoxRect } from "./layers.ts";
import { svgDocument } from "./layers.ts";
import { MOUTH_BOX, mouthElements } from "./mouth.ts";

/** Brow lift per look (view-box px of the 512 frame), as the stock avatars' neutral/listening/thinking. */
const BROW_LIFT = { neutral: 0, listening: 3, thinking: 5 } as const;
/** Ids of the moving parts, never in the body layer. */
const MOVING = new Set(["head", "eyes-open", "eyes-closed", "brows", "mouth"]);
/** Elements that draw nothing themselves and are kept in every layer (ids referenced from any part). */
const ALWAYS = new Set(["defs", "style"]);

const idOf = (el: SvgElement) => el.attrs.get("id") ?? "";

/** True when `el` or an element under it has one of `ids`. */
function holds(el: SvgElement, ids: ReadonlySet<string>): boolean {
  return ids.has(idOf(el)) || el.children.some((c) => typeof c !== "string" && holds(c, ids));
}

const escapeAttr = (v: string) => v.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");

/**
 * The drawing's elements under `el` without the subtrees whose id is in `without`: whole where nothing is
 * left out, rebuilt as the same element around its kept children where something is.
 */
function without(el: SvgElement, ids: ReadonlySet<string>): string {
  if (ids.has(idOf(el))) return "";
  if (ALWAYS.has(el.name) || !holds(el, ids)) {
    return el.name === "svg" ? children(el, ids) : serialiseSvg(el, false);
  }
  if (el.name === "svg") return children(el, ids);
  const attrs = [...el.attrs].map(([k, v]) => ` ${k}="${escapeAttr(v)}"`).join("");
  return `<${el.name}${attrs}>${children(el, ids)}</${el.name}>`;
}

function children(el: SvgElement, ids: ReadonlySet<string>): string {
  return el.children.map((c) => typeof c === "string" ? "" : without(c, ids)).join("");
}

/** The part with id `id`, inside its ancestors' groups (their attributes kept), without `ids`. */
function part(root: SvgElement, id: string, ids: ReadonlySet<string>): string {
  const target = new Set([id]);
  const walk = (el: SvgElement): string => {
    if (idOf(el) === id) return without(el, ids);
    if (ALWAYS.has(el.name)) return serialiseSvg(el, false);
    if (!holds(el, target)) return "";
    const inner = el.children.map((c) => typeof c === "string" ? "" : walk(c)).join("");
    if (el.name === "svg") return inner;
    const attrs = [...el.attrs].filter(([k]) => k !== "id").map(([k, v]) => ` ${k}="${escapeAttr(v)}"`).join(
      "",
    );
    return `<g${attrs}>${inner}</g>`;
  };
  return walk(root);
}

/** The layers of an accepted drawing. */
export function layersOfDrawing(d: Pick<AcceptedSvg, "root" | "rig">): AvatarLayers {
  const [vx, vy, vw, vh] = d.rig.viewBox;
  const s = Math.min(512 / vw, 512 / vh);
  const tx = (512 - vw * s) / 2 - vx * s, ty = (512 - vh * s) / 2 - vy * s;
  const fit = (elements: string) =>
    svgDocument(`<g transform="translate(${tx} ${ty}) scale(${s})">${elements}</g>`);
  const m = d.rig.mouth;
  const mouthBox: ViewBoxRect = {
    x: tx + m.x * s,
    y: ty + m.y * s,
    width: m.width * s,
    height: m.height * s,
  };
  const body = fit(without(d.root, MOVING));
  const head = fit(
    d.rig.head ? part(d.root, "head", new Set(["eyes-open", "eyes-closed", "brows", "mouth"])) : "",
  );
  const eyesOf = (id: string) => part(d.root, id, new Set(["mouth"]));
  const open = d.rig.eyesOpen ? eyesOf("eyes-open") : "";
  const closed = d.rig.eyesClosed ? eyesOf("eyes-closed") : open;
  const brows = d.rig.brows ? part(d.root, "brows", new Set(["mouth"])) : "";
  return {
    body,
    head,
    eyes: (state, look) =>
      svgDocument(
        `<g transform="translate(${tx} ${ty}) scale(${s})">${state === "closed" ? closed : open}</g>` +
          `<g transform="translate(${tx} ${ty - BROW_LIFT[look]}) scale(${s})">${brows}</g>`,
      ),
    // The stock mouth, drawn for MOUTH_BOX, mapped onto the rig's box.
    mouthElements: (pose, idPrefix) =>
      `<g transform="translate(${mouthBox.x} ${mouthBox.y}) scale(${mouthBox.width / MOUTH_BOX.width} ${
        mouthBox.height / MOUTH_BOX.height
      }) translate(${-MOUTH_BOX.x} ${-MOUTH_BOX.y})">${
        mouthElements({ lips: d.rig.lips, skinShade: d.rig.lips }, pose, idPrefix)
      }</g>`,
    mouthBox,
  };
}
