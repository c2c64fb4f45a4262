/**
 * Reads the example files a Markdown document shows: a fenced code block preceded by an HTML comment
 * `<!-- file: name -->` (invisible when rendered; blank lines may follow it). Tests write them out and run
 * them as written.
 *
 * @module
 */

/** The document's example files, by name, with the block's indentation (inside a list item) removed. */
export function exampleFiles(markdown: string): Map<string, string> {
  const files = new Map<string, string>();
  const pattern = /^([ \t]*)<!-- file: (\S+) -->\n(?:[ \t]*\n)*\1```[a-z]*\n([\s\S]*?)\n\1```$/gm;
  for (const [, indent, name, body] of markdown.matchAll(pattern)) {
    if (files.has(name)) throw new Error(`two examples named ${name}`);
    files.set(
      name,
      body.split("\n").map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l)).join("\n") + "\n",
    );
  }
  return files;
}
