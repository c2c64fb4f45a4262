/**
 * Rules for untrusted text the API accepts and later shows or uses: URL fields and display names.
 *
 * A URL field is kept exactly as sent (no trimming, no rewriting) and refused when it holds any whitespace
 * or control character: what is validated is what is used. A display name (an API key's `name`) is refused
 * when it holds characters that hide or reorder text on a terminal or a web page (controls, bidi overrides,
 * zero-width and other format characters, line/paragraph separators, a BOM, unpaired surrogates) or is blank.
 *
 * @module
 */
import { z } from "@hono/zod-openapi";

/** Whitespace (Unicode), C0/C1 controls, format characters (bidi, zero-width, BOM), separators, surrogates. */
const URL_FORBIDDEN = /[\s\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u;
/** Characters a display name may not contain (whitespace other than these separators is allowed inside). */
const NAME_FORBIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u;
/** Only whitespace or space separators. */
const BLANK = /^[\s\p{Z}]*$/u;

/**
 * Why `value` is not an acceptable URL of `scheme` (`"https"`, `"wss"`), or null when it is. `check` adds a
 * rule on the parsed URL (it returns its own message, or null).
 */
export function urlProblem(
  value: string,
  scheme: string,
  check?: (url: URL) => string | null,
): string | null {
  if (URL_FORBIDDEN.test(value)) return "must not contain whitespace or control characters";
  if (!value.startsWith(`${scheme}://`)) return `must be a ${scheme}:// URL`;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `must be a valid ${scheme}:// URL`;
  }
  if (!url.hostname) return `must be a valid ${scheme}:// URL`;
  return check ? check(url) : null;
}

/**
 * A URL field: at most `max` characters, the given scheme, no whitespace or control character anywhere,
 * parseable by the WHATWG URL parser, and `check` (if given) passes. The value is not rewritten.
 */
export function urlField(scheme: "https" | "wss", max: number, check?: (url: URL) => string | null) {
  return z.string().max(max).superRefine((value, ctx) => {
    const problem = urlProblem(value, scheme, check);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  }).openapi({ format: "uri", pattern: `^${scheme}://\\S+$`, maxLength: max });
}

/** Why `value` is not an acceptable display name of 1..`max` characters, or null when it is. */
export function displayNameProblem(value: string, max = 128): string | null {
  const length = [...value].length;
  if (length < 1 || length > max) return `must be 1..${max} characters`;
  if (!value.isWellFormed()) return "must not contain unpaired surrogates";
  if (NAME_FORBIDDEN.test(value)) {
    return "must not contain control, format (bidi, zero-width, BOM) or line/paragraph separator characters";
  }
  if (BLANK.test(value)) return "must not be blank";
  return null;
}

/** A display name field (1..`max` characters, see {@link displayNameProblem}). */
export function displayNameField(max = 128) {
  return z.string().superRefine((value, ctx) => {
    const problem = displayNameProblem(value, max);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  }).openapi({ minLength: 1, maxLength: max });
}
