/**
 * `deno task openapi`: writes openapi.json (from the route definitions) and docs/errors.md (from the
 * error catalog). With `--check` it writes nothing and exits 1 if either is stale.
 *
 * @module
 */
import { emitOpenApi } from "../src/api/emit_openapi.ts";
import { errorReferenceMarkdown } from "../src/api/error_reference.ts";

const outputs: [URL, string][] = [
  [new URL("../openapi.json", import.meta.url), await emitOpenApi()],
  [new URL("../docs/errors.md", import.meta.url), errorReferenceMarkdown()],
];
let stale = false;
for (const [path, text] of outputs) {
  if (Deno.args.includes("--check")) {
    const current = await Deno.readTextFile(path).catch(() => "");
    if (current !== text) {
      console.error(`${path.pathname} is stale: run \`deno task openapi\``);
      stale = true;
    }
  } else {
    await Deno.writeTextFile(path, text);
    console.log(`wrote ${path.pathname}`);
  }
}
if (stale) Deno.exit(1);
