/**
 * The limits on an uploaded avatar drawing, in one place so the sanitiser enforces them, the docs quote them
 * and the tests probe them. A drawing over any limit is refused (`400 SVC_INVALID_AVATAR` naming the limit);
 * none is configurable, so every project's drawing costs a worker at most what these bound.
 *
 * @module
 */

/** The limits of an uploaded drawing. */
export interface SvgLimits {
  /** UTF-8 bytes of the SVG text. */
  maxBytes: number;
  /** Elements of the drawing (every element parsed, kept or not). */
  maxElements: number;
  /** Nesting depth of elements (the root is 1). */
  maxDepth: number;
  /** Characters of path data (`d`, `points`) in one attribute. */
  maxPathData: number;
  /** Characters of path data in the whole drawing. */
  maxTotalPathData: number;
  /** Decoded bytes of one embedded PNG or JPEG. */
  maxImageBytes: number;
  /** Embedded images. */
  maxImages: number;
  /** Characters of CSS in all `<style>` elements and `style` attributes. */
  maxCss: number;
}

/** The limits in force (docs/avatars.md#limits). */
export const SVG_LIMITS: Readonly<SvgLimits> = {
  maxBytes: 384 * 1024,
  maxElements: 5000,
  maxDepth: 32,
  maxPathData: 64 * 1024,
  maxTotalPathData: 192 * 1024,
  maxImageBytes: 192 * 1024,
  maxImages: 4,
  maxCss: 32 * 1024,
};

/**
 * How much longer than a stock avatar one frame of a drawing may take to rasterise, measured at upload
 * (`media/art/svg_cost.ts`).
 */
export const MAX_FRAME_COST_FACTOR = 4;
