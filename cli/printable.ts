/**
 * Text that came from the service (key names, error messages, any field) is printed with every
 * character that could hide, reorder or forge what the operator reads replaced by a visible escape:
 * C0 and C1 controls and DEL (a terminal would act on them), bidirectional overrides and isolates (they
 * reorder what follows), zero-width and other invisible format characters, the BOM, the line and
 * paragraph separators U+2028/U+2029, and lone surrogates (not text at all).
 *
 * Human-readable output shows them as `\u{202E}`; JSON output as `\u202e` (still valid JSON, with the
 * same value).
 *
 * @module
 */

/**
 * Every character the CLI never prints raw: Unicode categories Cc (controls, C0, DEL and C1), Cf
 * (format: bidi controls, zero-width characters, the BOM, soft hyphen, …), Zl and Zp (U+2028, U+2029),
 * Cs (lone surrogates) and Co / Cn (private use and unassigned code points, which render as anything).
 */
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Co}\p{Cn}]/gu;

/** `text` with every hidden character written as `\u{XXXX}` (for the readable output). */
export function printable(text: string): string {
  return text.replace(HIDDEN, (c) => `\\u{${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}}`);
}

/**
 * Serialises `value` as JSON with every hidden character escaped as `\uXXXX` (UTF-16 units), so the
 * output is plain to the eye and parses back to exactly `value`.
 */
export function printableJson(value: unknown, indent?: number): string {
  // JSON.stringify already escapes C0 controls and lone surrogates inside strings, so a raw line feed in
  // its output is the indentation's own.
  return JSON.stringify(value, null, indent).replace(
    HIDDEN,
    (c) =>
      c === "\n"
        ? c
        : [...Array(c.length).keys()].map((i) => `\\u${c.charCodeAt(i).toString(16).padStart(4, "0")}`).join(
          "",
        ),
  );
}
