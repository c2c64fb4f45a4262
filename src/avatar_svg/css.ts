/**
 * The CSS an uploaded drawing may carry (`style` attributes and `<style>` elements), read by a small
 * tokenizer, not by regular expressions over the whole text: declarations are split at `;` and `:` outside
 * strings and parentheses, only presentation properties of the allow-list are kept, and a value may call only
 * `url(#id)`, `rgb()`, `rgba()`, `hsl()` and `hsla()`. At-rules (`@import`, `@font-face`, …), escapes
 * (`\`, which can spell any of the above) and comments are refused, so what is served is what was checked.
 *
 * @module
 */
import { SvgRefusal } from "./refusal.ts";

/** The presentation properties a drawing may set, as attributes and as CSS declarations alike. */
export const PRESENTATION_PROPERTIES = [
  "fill",
  "fill-opacity",
  "fill-rule",
  "stroke",
  "stroke-width",
  "stroke-opacity",
  "stroke-linecap",
  "stroke-linejoin",
  "stroke-miterlimit",
  "stroke-dasharray",
  "stroke-dashoffset",
  "opacity",
  "clip-path",
  "clip-rule",
  "mask",
  "filter",
  "stop-color",
  "stop-opacity",
  "flood-color",
  "flood-opacity",
  "display",
  "visibility",
  "color",
  "paint-order",
  "font-family",
  "font-size",
  "font-weight",
  "font-style",
  "text-anchor",
  "letter-spacing",
] as const;

/** The properties CSS declarations may set: the presentation properties, and two of CSS alone. */
export const CSS_PROPERTIES: ReadonlySet<string> = new Set([
  ...PRESENTATION_PROPERTIES,
  "mix-blend-mode",
  "isolation",
]);

const FUNCTIONS = new Set(["url", "rgb", "rgba", "hsl", "hsla"]);

/** A local reference: `#` and an XML name. */
export const LOCAL_REF = /^#[A-Za-z_][\w.-]{0,127}$/;

/**
 * Checks one value (of a CSS declaration or a presentation attribute): every function call is allowed and
 * every `url()` is local. Returns the value trimmed; throws {@link SvgRefusal} naming what is refused.
 */
export function checkValue(where: string, value: string): string {
  if (value.includes("\\")) throw new SvgRefusal(`${where}: CSS escapes (\\) are not allowed`);
  if (value.includes("/*")) throw new SvgRefusal(`${where}: CSS comments are not allowed`);
  let i = 0;
  while (i < value.length) {
    const open = value.indexOf("(", i);
    if (open < 0) break;
    let s = open - 1;
    while (s >= 0 && /[A-Za-z-]/.test(value[s])) s--;
    const fn = value.slice(s + 1, open).toLowerCase();
    if (!FUNCTIONS.has(fn)) throw new SvgRefusal(`${where}: the CSS function "${fn || "("}" is not allowed`);
    const close = value.indexOf(")", open);
    if (close < 0) throw new SvgRefusal(`${where}: an unclosed "("`);
    const arg = value.slice(open + 1, close).trim();
    if (fn === "url") {
      const bare = arg.replace(/^(['"])(.*)\1$/, "$2").trim();
      if (!LOCAL_REF.test(bare)) {
        throw new SvgRefusal(
          `${where}: url(${truncate(arg)}) is an external reference (only url(#id) is allowed)`,
        );
      }
    } else if (!/^[\d\s.,%+-]*$/.test(arg)) {
      throw new SvgRefusal(`${where}: ${fn}(${truncate(arg)}) takes numbers only`);
    }
    i = close + 1;
  }
  if (/[<>{}@]/.test(value)) throw new SvgRefusal(`${where}: the value "${truncate(value)}" is not allowed`);
  return value.trim();
}

/** Splits CSS text at `sep` outside strings and parentheses. */
function splitTop(text: string, sep: string): string[] {
  const out: string[] = [];
  let depth = 0, quote = "", start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      if (c === quote) quote = "";
    } else if (c === '"' || c === "'") quote = c;
    else if (c === "(") depth++;
    else if (c === ")") depth = Math.max(0, depth - 1);
    else if (c === sep && depth === 0) {
      out.push(text.slice(start, i));
      start = i + 1;
    }
  }
  out.push(text.slice(start));
  return out;
}

/**
 * The declarations of a `style` attribute or rule body, rebuilt: allowed properties kept (values checked),
 * others dropped and named in `dropped`.
 */
export function sanitiseDeclarations(where: string, text: string, dropped: string[]): string {
  if (text.includes("\\")) throw new SvgRefusal(`${where}: CSS escapes (\\) are not allowed`);
  if (text.includes("@")) {
    throw new SvgRefusal(`${where}: CSS at-rules (@import, @font-face, …) are not allowed`);
  }
  const kept: string[] = [];
  for (const decl of splitTop(text, ";")) {
    if (!decl.trim()) continue;
    const [prop, ...rest] = splitTop(decl, ":");
    const name = prop.trim().toLowerCase();
    if (rest.length === 0) {
      throw new SvgRefusal(`${where}: "${truncate(decl.trim())}" is not a CSS declaration`);
    }
    const value = checkValue(`${where} ${name}`, rest.join(":").replace(/!important\s*$/i, ""));
    if (!CSS_PROPERTIES.has(name)) {
      dropped.push(`CSS property ${name}`);
      continue;
    }
    kept.push(`${name}:${value}`);
  }
  return kept.join(";");
}

/**
 * A `<style>` element's text, rebuilt rule by rule: selectors of names, classes, ids, `*`, `,`, `>` and
 * spaces only; bodies through {@link sanitiseDeclarations}. At-rules and anything else are refused.
 */
export function sanitiseStylesheet(text: string, dropped: string[]): string {
  if (text.includes("\\")) throw new SvgRefusal("<style>: CSS escapes (\\) are not allowed");
  if (text.includes("@")) {
    throw new SvgRefusal("<style>: CSS at-rules (@import, @font-face, …) are not allowed");
  }
  if (text.includes("/*")) throw new SvgRefusal("<style>: CSS comments are not allowed");
  const rules: string[] = [];
  let rest = text;
  while (rest.trim()) {
    const open = rest.indexOf("{");
    const close = rest.indexOf("}", open);
    if (open < 0 || close < 0) throw new SvgRefusal("<style>: a rule without a { … } body");
    const selector = rest.slice(0, open).trim();
    if (!/^[\w\s.#*,>:-]+$/.test(selector) || /:\s*[a-z-]*\(/i.test(selector)) {
      throw new SvgRefusal(`<style>: the selector "${truncate(selector)}" is not allowed`);
    }
    const body = sanitiseDeclarations(`<style> ${selector}`, rest.slice(open + 1, close), dropped);
    if (body) rules.push(`${selector}{${body}}`);
    rest = rest.slice(close + 1);
  }
  return rules.join("");
}

/** At most 60 characters of `s`, for messages. */
export function truncate(s: string): string {
  return s.length > 60 ? `${s.slice(0, 57)}…` : s;
}
