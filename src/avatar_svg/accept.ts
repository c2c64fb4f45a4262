/**
 * An uploaded drawing accepted or refused in one call: sanitised (`sanitise.ts`), its rig read and checked
 * (`rig.ts`), and serialised to the one text that is stored and served. Re-accepting that text gives it
 * back unchanged, so a worker that reads a stored drawing checks it again at no risk. Pure code.
 *
 * @module
 */
import { SVG_LIMITS, type SvgLimits } from "./limits.ts";
import { readRig, type SvgRig } from "./rig.ts";
import { sanitiseSvg, serialiseSvg, type SvgElement } from "./sanitise.ts";

/** An accepted drawing. */
export interface AcceptedSvg {
  /** The rebuilt drawing: the only text stored and served. */
  svg: string;
  /** Its rebuilt tree. */
  root: SvgElement;
  /** Its rig. */
  rig: SvgRig;
  /** Inert parts that were dropped (unknown elements, attributes, CSS properties). */
  dropped: string[];
}

/**
 * Accepts a drawing or throws `SvgRefusal` naming what is refused.
 *
 * @example Usage
 * ```ts
 * import { acceptSvg } from "./accept.ts";
 * const a = acceptSvg(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 100"><rect id="mouth" x="40" y="60" width="20" height="10"/></svg>`);
 * a.rig.mouth; // { x: 40, y: 60, width: 20, height: 10 }
 * ```
 */
export function acceptSvg(text: string, limits: SvgLimits = SVG_LIMITS): AcceptedSvg {
  const { root, dropped } = sanitiseSvg(text, limits);
  const rig = readRig(root);
  return { svg: serialiseSvg(root), root, rig, dropped };
}
