/**
 * An uploaded avatar drawing, made safe: parsed by a real XML parser (`saxes`, a strict, namespace-aware,
 * streaming XML 1.0 parser chosen because it expands no entity but the five predefined ones, reports a DTD
 * instead of processing it, rejects anything not well-formed, and lets the element count and depth be bounded
 * while parsing, before anything is built), then rebuilt from an allow-list of SVG elements and attributes.
 *
 * What could run script or fetch anything is refused, naming it (`SvgRefusal`): `<script>`,
 * `<foreignObject>`, links, animation elements, `on*` attributes, any reference that is not `#id` of the same
 * document (in `href`, `xlink:href`, `url()` of attributes and CSS), CSS at-rules and escapes, DTDs,
 * processing instructions, images other than an embedded PNG or JPEG under the size limit. What is merely
 * unknown and inert (editor metadata, `<title>`, unknown elements and attributes, unknown CSS properties)
 * is dropped and listed in `dropped`. Only the rebuilt text is ever stored or served.
 *
 * Pure code (no Deno API).
 *
 * @module
 */
import { SaxesParser, type SaxesTagNS } from "saxes";
import {
  checkValue,
  LOCAL_REF,
  PRESENTATION_PROPERTIES,
  sanitiseDeclarations,
  sanitiseStylesheet,
  truncate,
} from "./css.ts";
import { SVG_LIMITS, type SvgLimits } from "./limits.ts";
import { SvgRefusal } from "./refusal.ts";

/** The SVG namespace. */
export const SVG_NS = "http://www.w3.org/2000/svg";
const XLINK_NS = "http://www.w3.org/1999/xlink";
const XML_NS = "http://www.w3.org/XML/1998/namespace";

/** One element of a rebuilt drawing. */
export interface SvgElement {
  name: string;
  attrs: Map<string, string>;
  children: (SvgElement | string)[];
}

/** Elements kept (SVG namespace only). */
const ELEMENTS: ReadonlySet<string> = new Set([
  "svg",
  "g",
  "defs",
  "symbol",
  "use",
  "path",
  "rect",
  "circle",
  "ellipse",
  "line",
  "polyline",
  "polygon",
  "linearGradient",
  "radialGradient",
  "stop",
  "clipPath",
  "mask",
  "pattern",
  "image",
  "text",
  "tspan",
  "style",
  "filter",
  "feGaussianBlur",
  "feOffset",
  "feFlood",
  "feBlend",
  "feComposite",
  "feColorMatrix",
  "feMerge",
  "feMergeNode",
  "feDropShadow",
]);

/** Elements refused wherever they are, in any namespace: they run script, load something or animate. */
const REFUSED: ReadonlySet<string> = new Set([
  "script",
  "foreignobject",
  "a",
  "animate",
  "set",
  "animatetransform",
  "animatemotion",
  "animatecolor",
  "discard",
  "handler",
  "listener",
  "iframe",
  "embed",
  "object",
  "feimage",
  "audio",
  "video",
  "canvas",
  "cursor",
  "font-face-uri",
  "tref",
  "mpath",
]);

/** Attributes kept (no namespace; `xlink:href` becomes `href`). */
const ATTRIBUTES: ReadonlySet<string> = new Set([
  "id",
  "class",
  "style",
  "transform",
  "d",
  "x",
  "y",
  "width",
  "height",
  "rx",
  "ry",
  "cx",
  "cy",
  "r",
  "fx",
  "fy",
  "fr",
  "x1",
  "y1",
  "x2",
  "y2",
  "points",
  "href",
  "viewBox",
  "preserveAspectRatio",
  "offset",
  "gradientUnits",
  "gradientTransform",
  "spreadMethod",
  "patternUnits",
  "patternContentUnits",
  "patternTransform",
  "maskUnits",
  "maskContentUnits",
  "clipPathUnits",
  "filterUnits",
  "primitiveUnits",
  "in",
  "in2",
  "result",
  "stdDeviation",
  "dx",
  "dy",
  "mode",
  "operator",
  "k1",
  "k2",
  "k3",
  "k4",
  "values",
  "type",
  ...PRESENTATION_PROPERTIES,
  "dominant-baseline",
  "vector-effect",
]);

/** Attributes holding path data (bounded by the path limits). */
const PATH_DATA = new Set(["d", "points"]);

/** The result of sanitising a drawing. */
export interface SanitisedSvg {
  /** The rebuilt root `<svg>` element (namespace-free names; serialise with {@link serialiseSvg}). */
  root: SvgElement;
  /** What was dropped as inert and unknown (one line each, deduplicated). */
  dropped: string[];
  /** Elements parsed. */
  elements: number;
}

const IMAGE_DATA = /^data:image\/(png|jpeg);base64,([A-Za-z0-9+/\s]*={0,2})$/;

function checkImage(href: string, limits: SvgLimits): void {
  const m = IMAGE_DATA.exec(href);
  if (!m) {
    throw new SvgRefusal(
      `<image> href "${
        truncate(href)
      }": only an embedded PNG or JPEG (data:image/png|jpeg;base64,…) is allowed`,
    );
  }
  const b64 = m[2].replace(/\s+/g, "");
  if (b64.length * 0.75 > limits.maxImageBytes + 3) {
    throw new SvgRefusal(`<image>: the embedded image is over ${limits.maxImageBytes} bytes`);
  }
  let bytes: Uint8Array;
  try {
    bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  } catch {
    throw new SvgRefusal("<image>: the embedded image is not valid base64");
  }
  const png = bytes[0] === 0x89 && bytes[1] === 0x50 && bytes[2] === 0x4e && bytes[3] === 0x47;
  const jpeg = bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff;
  if (m[1] === "png" ? !png : !jpeg) {
    throw new SvgRefusal(`<image>: the embedded data is not a ${m[1].toUpperCase()} image`);
  }
}

/**
 * Parses and rebuilds a drawing. Throws {@link SvgRefusal} naming what is refused; returns the rebuilt tree.
 *
 * @example Usage
 * ```ts
 * import { sanitiseSvg, serialiseSvg } from "./sanitise.ts";
 * const { root } = sanitiseSvg(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10"><rect width="5" height="5"/></svg>`);
 * serialiseSvg(root); // '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10"><rect width="5" height="5"/></svg>'
 * ```
 */
export function sanitiseSvg(text: string, limits: SvgLimits = SVG_LIMITS): SanitisedSvg {
  const bytes = new TextEncoder().encode(text).length;
  if (bytes > limits.maxBytes) {
    throw new SvgRefusal(`the drawing is ${bytes} bytes (at most ${limits.maxBytes})`);
  }
  const dropped = new Set<string>();
  const stack: (SvgElement | null)[] = [];
  let root: SvgElement | null = null;
  let elements = 0, pathData = 0, images = 0, css = 0;
  const parser = new SaxesParser({ xmlns: true, position: true });
  parser.on("error", (e) => {
    if (e instanceof SvgRefusal) throw e;
    throw new SvgRefusal(`not well-formed XML: ${truncate(e.message)}`);
  });
  parser.on("doctype", () => {
    throw new SvgRefusal("a DOCTYPE (DTD, entities) is not allowed");
  });
  parser.on("processinginstruction", (pi) => {
    throw new SvgRefusal(`the processing instruction <?${truncate(pi.target)}?> is not allowed`);
  });
  parser.on("opentag", (tag: SaxesTagNS) => {
    elements++;
    if (elements > limits.maxElements) throw new SvgRefusal(`over ${limits.maxElements} elements`);
    if (stack.length + 1 > limits.maxDepth) {
      throw new SvgRefusal(`nested deeper than ${limits.maxDepth} elements`);
    }
    const local = tag.local;
    if (REFUSED.has(local.toLowerCase())) {
      throw new SvgRefusal(
        `the <${local}> element is not allowed (script, links, animation, external content)`,
      );
    }
    for (const a of Object.values(tag.attributes)) {
      if (/^on/i.test(a.local)) throw new SvgRefusal(`the event attribute ${a.name} is not allowed`);
    }
    if (stack.length === 0 && (local !== "svg" || tag.uri !== SVG_NS)) {
      throw new SvgRefusal(`the root element must be <svg> in the SVG namespace (${SVG_NS})`);
    }
    const parent = stack.length ? stack[stack.length - 1] : undefined;
    if (parent === null || tag.uri !== SVG_NS || !ELEMENTS.has(local)) {
      // An inert element outside the allow-list (or inside one): dropped with its content.
      if (parent !== null) dropped.add(`element <${tag.name}>`);
      stack.push(null);
      return;
    }
    const el: SvgElement = { name: local, attrs: new Map(), children: [] };
    for (const a of Object.values(tag.attributes)) {
      let name = a.local;
      if (a.uri === XLINK_NS && a.local === "href") name = "href";
      else if (a.uri === XML_NS && a.local === "space") continue;
      else if (a.prefix === "xmlns" || a.name === "xmlns") continue;
      else if (a.uri) {
        dropped.add(`attribute ${a.name}`);
        continue;
      }
      const value = a.value;
      if (name === "href") {
        if (local === "image") {
          checkImage(value.trim(), limits);
          if (++images > limits.maxImages) throw new SvgRefusal(`over ${limits.maxImages} embedded images`);
        } else if (!LOCAL_REF.test(value.trim())) {
          throw new SvgRefusal(
            `<${local}> ${a.name}="${truncate(value)}" is an external reference (only #id is allowed)`,
          );
        }
        el.attrs.set("href", value.trim());
        continue;
      }
      if (!ATTRIBUTES.has(name)) {
        dropped.add(`attribute ${a.name}`);
        continue;
      }
      if (PATH_DATA.has(name)) {
        if (value.length > limits.maxPathData) {
          throw new SvgRefusal(`<${local}> ${name}: over ${limits.maxPathData} characters of path data`);
        }
        pathData += value.length;
        if (pathData > limits.maxTotalPathData) {
          throw new SvgRefusal(`over ${limits.maxTotalPathData} characters of path data in all`);
        }
        if (!/^[\d\s.,eE+\-MmZzLlHhVvCcSsQqTtAa]*$/.test(value)) {
          throw new SvgRefusal(`<${local}> ${name}: not path data`);
        }
        el.attrs.set(name, value);
        continue;
      }
      if (name === "style") {
        css += value.length;
        if (css > limits.maxCss) throw new SvgRefusal(`over ${limits.maxCss} characters of CSS`);
        const list: string[] = [];
        const kept = sanitiseDeclarations(`<${local}> style`, value, list);
        list.forEach((d) => dropped.add(d));
        if (kept) el.attrs.set("style", kept);
        continue;
      }
      el.attrs.set(name, checkValue(`<${local}> ${name}`, value));
    }
    if (local === "image" && !el.attrs.has("href")) throw new SvgRefusal("<image> without an embedded image");
    if (parent) parent.children.push(el);
    else root = el;
    stack.push(el);
  });
  parser.on("text", (t) => keepText(t));
  parser.on("cdata", (t) => keepText(t));
  function keepText(t: string) {
    const el = stack[stack.length - 1];
    if (!el) return;
    if (el.name === "style") {
      css += t.length;
      if (css > limits.maxCss) throw new SvgRefusal(`over ${limits.maxCss} characters of CSS`);
      el.children.push(t);
    } else if (el.name === "text" || el.name === "tspan") el.children.push(t);
  }
  parser.on("closetag", () => {
    const el = stack.pop();
    if (el && el.name === "style") {
      const list: string[] = [];
      const sheet = sanitiseStylesheet(el.children.join(""), list);
      list.forEach((d) => dropped.add(d));
      el.children = sheet ? [sheet] : [];
    }
  });
  parser.write(text).close();
  if (!root) throw new SvgRefusal("no <svg> root element");
  return { root, dropped: [...dropped], elements };
}

const escapeAttr = (s: string) =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
const escapeText = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** Serialises a rebuilt element (the root gets the SVG namespace). */
export function serialiseSvg(el: SvgElement, isRoot = true): string {
  const attrs = [...el.attrs].map(([k, v]) => ` ${k}="${escapeAttr(v)}"`).join("");
  const ns = isRoot ? ` xmlns="${SVG_NS}"` : "";
  if (el.children.length === 0) return `<${el.name}${ns}${attrs}/>`;
  const inner = el.children.map((c) => typeof c === "string" ? escapeText(c) : serialiseSvg(c, false)).join(
    "",
  );
  return `<${el.name}${ns}${attrs}>${inner}</${el.name}>`;
}
