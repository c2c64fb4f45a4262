/**
 * The media plane names no transport (docs/architecture.md, "Where things live"): what differs by
 * transport (its media server, its endpoints, how a client attaches, whether it paces its own sending) is
 * declared in the transport registry (`src/media/transports/registry.ts`) and read from there. Only the
 * transports themselves (`src/media/transports/`) may spell a transport's name in code; comments may. A
 * third transport is then added without touching the media session's parts.
 */
import assert from "node:assert/strict";
import { TRANSPORT_KINDS } from "../../src/vocabulary/transports.ts";

const ROOT = new URL("../../", import.meta.url);

/** Code (comments dropped) of every `.ts` file under `dir` that is no test, by path. */
async function codeOf(dir: string, into = new Map<string, string>()): Promise<Map<string, string>> {
  for await (const e of Deno.readDir(new URL(dir, ROOT))) {
    const p = `${dir}/${e.name}`;
    if (e.isDirectory) await codeOf(p, into);
    else if (e.name.endsWith(".ts") && !e.name.endsWith("_test.ts")) {
      into.set(p, stripComments(await Deno.readTextFile(new URL(p, ROOT))));
    }
  }
  return into;
}

/** The text without its block and line comments. */
function stripComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:])\/\/.*$/gm, "$1");
}

/** The transport names `code` spells (a string, a template, a key, an identifier). */
function transportsNamed(code: string): string[] {
  return TRANSPORT_KINDS.filter((kind) => new RegExp(`\\b${kind}\\b`).test(code));
}

/** Whether `path` may name a transport: the transports and their registry. */
const mayName = (path: string) => path.startsWith("src/media/transports/");

Deno.test("media plane: the check sees a transport named in code and not one named in a comment", () => {
  assert.deepEqual(transportsNamed(stripComments(`if (t.kind === "webrtc_sfu") pace();`)), ["webrtc_sfu"]);
  assert.deepEqual(transportsNamed(stripComments(`const k = \`websocket_fmp4\`;`)), ["websocket_fmp4"]);
  assert.deepEqual(transportsNamed(stripComments(`/** over \`webrtc_sfu\` */\n// websocket_fmp4\nx();`)), []);
  assert.ok(TRANSPORT_KINDS.length >= 2, "the vocabulary lists the transports");
});

Deno.test("media plane: no module under src/media/ but the transports and their registry names a transport type", async () => {
  const code = await codeOf("src/media");
  assert.ok(code.has("src/media/session_media.ts") && code.has("src/media/transports/registry.ts"));
  const bad: string[] = [];
  for (const [path, text] of code) {
    if (mayName(path)) continue;
    for (const kind of transportsNamed(text)) bad.push(`${path} names ${kind}`);
  }
  assert.deepEqual(bad, []);
});
