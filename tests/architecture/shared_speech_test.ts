/**
 * The reference engine (`engine/`) and the service (`src/`) share their speech code through one floor,
 * `src/speech/` (the V0 protocol's messages, the voice activity detector, PCM helpers, the espeak-ng
 * binding), as docs/architecture.md draws it:
 *
 * - nothing under `src/` imports `engine/`, but the composition root starting the in-process reference
 *   engine (`src/app/embedded_engine.ts` → `engine/mod.ts`, a dynamic import);
 * - nothing under `engine/` imports `src/` beyond the shared floor;
 * - the shared floor imports nothing of `src/` outside itself, nor `engine/`.
 *
 * Static and dynamic imports, type-only ones included, as `deno info --json` sees them.
 */
import assert from "node:assert/strict";
import { filesUnder, type ModuleGraph, readModuleGraph } from "../../scripts/module_graph.ts";

let graph: ModuleGraph | null = null;
async function theGraph(): Promise<ModuleGraph> {
  graph ??= await readModuleGraph([...await filesUnder("src"), ...await filesUnder("engine")]);
  return graph;
}

/** Every local import edge `from → to` (dynamic ones included) whose ends match. */
function edges(g: ModuleGraph, from: (n: string) => boolean, to: (n: string) => boolean): string[] {
  const out: string[] = [];
  for (const [name, list] of g.imports) {
    if (!from(name)) continue;
    for (const e of list) if (to(e.to)) out.push(`${name} → ${e.to}${e.dynamic ? " (dynamic)" : ""}`);
  }
  return [...new Set(out)].sort();
}

const SPEECH = (n: string) => n.startsWith("src/speech/");

Deno.test("shared speech floor: src/ imports engine/ only where the composition root starts the reference engine", async () => {
  const g = await theGraph();
  const found = edges(g, (n) => n.startsWith("src/"), (n) => n.startsWith("engine/"));
  const allowed = (e: string) => e.startsWith("src/app/embedded_engine.ts → engine/mod.ts");
  assert.deepEqual(found.filter((e) => !allowed(e)), []);
  // The one allowed edge exists (the test is not vacuous): the composition root starts the engine.
  assert.ok(found.some(allowed), `expected src/app/embedded_engine.ts → engine/mod.ts among ${found}`);
});

Deno.test("shared speech floor: engine/ imports nothing of src/ beyond src/speech/", async () => {
  const g = await theGraph();
  const found = edges(g, (n) => n.startsWith("engine/"), (n) => n.startsWith("src/"));
  assert.deepEqual(found.filter((e) => !SPEECH(e.split(" → ")[1])), []);
  // It does use the shared floor (the V0 protocol, the VAD, the espeak-ng binding).
  for (const m of ["src/speech/v0_protocol.ts", "src/speech/vad.ts", "src/speech/espeak_lib.ts"]) {
    assert.ok(found.some((e) => e.includes(`→ ${m}`)), `engine/ imports ${m}`);
  }
});

Deno.test("shared speech floor: src/speech/ imports nothing of src/ or engine/ outside itself", async () => {
  const g = await theGraph();
  const found = edges(g, SPEECH, (n) => n.startsWith("src/") || n.startsWith("engine/"));
  assert.deepEqual(found.filter((e) => !SPEECH(e.split(" → ")[1])), []);
  // The service reads it too: the external engine's bridge (V0), the live lip sync (VAD, espeak-ng).
  const users = edges(g, (n) => n.startsWith("src/") && !SPEECH(n), SPEECH);
  for (const m of ["src/speech/v0_protocol.ts", "src/speech/vad.ts", "src/speech/espeak_lib.ts"]) {
    assert.ok(users.some((e) => e.endsWith(`→ ${m}`)), `src/ imports ${m}`);
  }
});
