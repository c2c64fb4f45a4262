/**
 * The module graph holds to docs/architecture.md, as `deno info --json` sees it (static imports, type-only
 * ones included; a dynamic `import()` counts only where a test says so):
 *
 * - the API side's entry points (`src/api/app.ts`, `src/sessions/service.ts`) and the CLI (`cli/main.ts`)
 *   load nothing of the media plane (`src/media/`), no vendor bridge (anything of `src/providers/` but the
 *   registry of schemas and the bridge port) and no `src/providers/wire/`, no `npm:ws`,
 *   `npm:@resvg/resvg-wasm` or `node:dgram`;
 * - no import cycle among `src/` files;
 * - no `src/` file imports `tests/`, `testing/`, `bench/` or the composition root `src/app/compose.ts`;
 *   `bench/` loads no `tests/` file;
 * - the floors: the session vocabulary and the provider definitions (whose list the vocabulary takes the
 *   provider names from) load nothing of the service but each other and the platform's leaves, and no
 *   `src/` file imports one on a higher floor.
 *
 * The API app's and the `api` process's assertions came with part two of issue 19 (the transport registry,
 * the worker side behind ports and a dynamic import).
 */
import assert from "node:assert/strict";
import {
  filesUnder,
  floorOf,
  importCycles,
  importPath,
  loadedBy,
  type ModuleGraph,
  mutualFolders,
  readModuleGraph,
  upwardImports,
} from "../../scripts/module_graph.ts";

/** What the API process and the CLI must never load (statically). */
const FORBIDDEN_NPM = ["npm:ws", "npm:@resvg/resvg-wasm", "node:dgram"];
/** The modules of `src/providers/` the API side may load: the provider definitions (`src/providers/definitions/`). */
const PROVIDER_DEFINITIONS = /^src\/providers\/definitions\/[^/]+\.ts$/;

/** Why `name` must not be loaded by an API-side entry point, or null when it may be. */
function forbidden(name: string): string | null {
  if (name.startsWith("src/media/")) return "the media plane";
  if (name.startsWith("src/providers/wire/")) return "the vendor wire code";
  if (name.startsWith("src/providers/") && !PROVIDER_DEFINITIONS.test(name)) return "a vendor bridge";
  if (FORBIDDEN_NPM.includes(name)) return name;
  return null;
}

let graph: ModuleGraph | null = null;
/** One graph of everything: the entry points, every `src/` file, every bench. */
async function theGraph(): Promise<ModuleGraph> {
  graph ??= await readModuleGraph([
    "main.ts",
    "cli/main.ts",
    ...await filesUnder("src"),
    ...await filesUnder("bench"),
  ]);
  return graph;
}

/** Fails, naming one import path per offender, when `entry` loads a forbidden module. */
async function assertLoadsNoMediaNorBridge(entry: string): Promise<void> {
  const g = await theGraph();
  const offenders = [...loadedBy(g, entry, { types: true })].filter((n) => forbidden(n) !== null);
  const paths = offenders.slice(0, 5).map((n) => `${forbidden(n)}: ${importPath(g, entry, n)!.join(" → ")}`);
  assert.deepEqual(paths, [], `${entry} loads ${offenders.length} module(s) it must not`);
}

Deno.test("module graph: the session service loads no media, no vendor bridge, no npm:ws, resvg or dgram", async () => {
  await assertLoadsNoMediaNorBridge("src/sessions/service.ts");
});

Deno.test("module graph: the CLI loads no media, no vendor bridge, no npm:ws, resvg or dgram", async () => {
  await assertLoadsNoMediaNorBridge("cli/main.ts");
});

Deno.test({
  name: "module graph: the API app loads no media, no vendor bridge, no npm:ws, resvg or dgram",
  // The worker side reaches the app through ports: the transports' client sockets (`TransportSockets` of
  // the transport registry, served by the one upgrade helper `api/transport_socket.ts`) and the worker
  // (`fleet/worker_port.ts`, for the internal API).
  fn: () => assertLoadsNoMediaNorBridge("src/api/app.ts"),
});

Deno.test({
  name: "module graph: an SVC_ROLE=api process loads the worker side only through a dynamic import",
  // The composition root imports the worker side (`app/worker_side.ts`: media plane, bridges, session
  // runtime and worker) and the embedded engine with `await import()` on the roles that run sessions only,
  // and names them through `app/worker_side_port.ts`.
  fn: async () => {
    const g = await theGraph();
    const offenders = [...loadedBy(g, "main.ts", { types: true })].filter((n) => forbidden(n) !== null);
    const paths = offenders.slice(0, 5).map((n) =>
      `${forbidden(n)}: ${importPath(g, "main.ts", n)!.join(" → ")}`
    );
    assert.deepEqual(paths, [], `main.ts loads ${offenders.length} module(s) statically it must not`);
    // …and the roles that run sessions do load them, through the dynamic import (the test is not vacuous).
    const withDynamic = loadedBy(g, "main.ts", { types: true, dynamic: true });
    for (const m of ["src/app/worker_side.ts", "src/media/media_plane.ts", "src/providers/bridges.ts"]) {
      assert.ok(withDynamic.has(m), `main.ts reaches ${m} through a dynamic import`);
    }
  },
});

Deno.test("module graph: no import cycle among src/ files, type-only imports included", async () => {
  const cycles = importCycles(await theGraph(), (n) => n.startsWith("src/"));
  assert.deepEqual(cycles.map((c) => c.join(" ↔ ")), []);
});

Deno.test("module graph: src/ imports no tests, test support, bench or composition root", async () => {
  const g = await theGraph();
  const bad: string[] = [];
  for (const [from, edges] of g.imports) {
    if (!from.startsWith("src/")) continue;
    for (const e of edges) {
      if (/^(tests|testing|bench)\//.test(e.to) || e.to === "src/app/compose.ts") {
        bad.push(`${from} → ${e.to}`);
      }
    }
  }
  assert.deepEqual(bad, []);
});

Deno.test("module graph: bench/ loads no tests/ file (the fakes and helpers both use are in testing/)", async () => {
  const g = await theGraph();
  const bad: string[] = [];
  for (const bench of await filesUnder("bench")) {
    for (const n of loadedBy(g, bench, { types: true, dynamic: true })) {
      if (n.startsWith("tests/")) bad.push(`${bench} loads ${n}`);
    }
  }
  assert.deepEqual(bad, []);
});

/**
 * What the session vocabulary and the provider definitions may load: each other, the platform's leaves (errors,
 * ids, URL text fields, the settings' shape) and the byte-level credential codecs the provider definitions' rules read
 * secrets with; zod.
 */
const VOCABULARY_MAY_LOAD =
  /^src\/(vocabulary\/|providers\/definitions\/|(errors|ids|text_fields|settings)\.ts$|auth\/credential_(bytes|url)\.ts$)|^npm:(@hono\/zod-openapi|zod)$/;

Deno.test("module graph: the session vocabulary and the provider definitions load nothing of the service but the platform's leaves", async () => {
  const g = await theGraph();
  const bad: string[] = [];
  for (const from of g.imports.keys()) {
    if (!/^src\/vocabulary\/[^/]+\.ts$/.test(from) || from.endsWith("_test.ts")) continue;
    // Everything the vocabulary loads, the provider definitions' list included (type-only imports too).
    for (const n of loadedBy(g, from, { types: true })) {
      if (!VOCABULARY_MAY_LOAD.test(n)) {
        bad.push(`${n}: ${importPath(g, from, n)!.join(" → ")}`);
      }
    }
  }
  assert.deepEqual([...new Set(bad)], []);
  // The provider definitions' list is what the vocabulary reads the provider names from (not vacuous).
  assert.ok(
    loadedBy(g, "src/vocabulary/schemas.ts", { types: true }).has(
      "src/providers/definitions/provider_types.ts",
    ),
  );
  // The platform's leaves import nothing of the service themselves.
  for (const leaf of ["src/errors.ts", "src/ids.ts", "src/clock.ts", "src/log.ts", "src/settings.ts"]) {
    const local = (g.imports.get(leaf) ?? []).filter((e) => !e.to.includes(":"));
    assert.deepEqual(local, [], `${leaf} imports nothing local`);
  }
});

Deno.test("module graph: no src/ file imports one on a higher floor", async () => {
  const g = await theGraph();
  // Every src/ file has a floor (a new folder must be given one in scripts/module_graph.ts).
  for (const name of g.imports.keys()) if (name.startsWith("src/")) floorOf(name);
  assert.deepEqual(upwardImports(g), []);
});

Deno.test("module graph: no two src/ folders import each other (ports live with their consumers)", async () => {
  assert.deepEqual(mutualFolders(await theGraph()), []);
});
