/**
 * The module graph as Deno sees it (`deno info --json`), and the measures `docs/architecture.md` holds the
 * code to: what each entry point loads, import cycles, imports that run up the floors.
 *
 * `deno run -A scripts/module_graph.ts` prints the report (the figures of the closing notes);
 * `tests/architecture/module_graph_test.ts` asserts the rules on the same graph.
 *
 * Names: a local module is its path from the repository root (`src/api/app.ts`), an npm package
 * `npm:<name>` (`npm:ws`, whatever the version or subpath), a built-in `node:<name>`.
 *
 * @module
 */

const ROOT = new URL("../", import.meta.url);
const ROOT_PATH = decodeURIComponent(ROOT.pathname);

/** One import of a module. */
export interface Edge {
  /** The imported module's name. */
  to: string;
  /** `import type` (or `export type … from`): loaded by the type checker only. */
  typeOnly: boolean;
  /** `import()`: loaded only when that code runs. */
  dynamic: boolean;
}

/** Modules and their imports, by name. */
export interface ModuleGraph {
  /** Every module Deno resolved, with its imports (empty for npm and node modules). */
  imports: Map<string, Edge[]>;
}

/** The name of a specifier (see the module documentation). */
export function moduleName(specifier: string): string {
  if (specifier.startsWith("file://")) {
    const path = decodeURIComponent(new URL(specifier).pathname);
    return path.startsWith(ROOT_PATH) ? path.slice(ROOT_PATH.length) : path;
  }
  if (specifier.startsWith("npm:")) {
    const rest = specifier.slice(4).replace(/^\//, "");
    const parts = rest.split("/");
    const name = rest.startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0];
    return `npm:${name.replace(/(.)@.*$/, "$1")}`;
  }
  return specifier;
}

interface InfoDependency {
  specifier: string;
  code?: { specifier: string };
  type?: { specifier: string };
  isDynamic?: boolean;
}

interface InfoModule {
  specifier: string;
  dependencies?: InfoDependency[];
}

/** Runs `deno info --json` on one file and returns its JSON. */
async function denoInfo(file: string): Promise<{ modules: InfoModule[]; redirects: Record<string, string> }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", "--config", `${ROOT_PATH}deno.json`, file],
    cwd: ROOT_PATH,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) throw new Error(`deno info ${file} failed: ${new TextDecoder().decode(out.stderr)}`);
  return JSON.parse(new TextDecoder().decode(out.stdout));
}

/**
 * The graph of everything `entries` (paths from the repository root) load, statically or dynamically,
 * type-only imports included.
 */
export async function readModuleGraph(entries: readonly string[]): Promise<ModuleGraph> {
  // One `deno info` over a file importing every entry: one resolution, one graph.
  const dir = await Deno.makeTempDir({ prefix: "module_graph_" });
  try {
    const file = `${dir}/entries.ts`;
    await Deno.writeTextFile(
      file,
      entries.map((e) => `import ${JSON.stringify(new URL(e, ROOT).href)};\n`).join(""),
    );
    const info = await denoInfo(file);
    const redirect = (s: string) => info.redirects[s] ?? s;
    const imports = new Map<string, Edge[]>();
    for (const m of info.modules) {
      const from = moduleName(m.specifier);
      if (m.specifier.startsWith("file://") && m.specifier.includes(dir)) continue;
      const edges: Edge[] = [];
      for (const d of m.dependencies ?? []) {
        const dynamic = d.isDynamic === true;
        if (d.code) edges.push({ to: moduleName(redirect(d.code.specifier)), typeOnly: false, dynamic });
        if (d.type && d.type.specifier !== d.code?.specifier) {
          edges.push({ to: moduleName(redirect(d.type.specifier)), typeOnly: !d.code, dynamic });
        }
      }
      imports.set(from, edges);
    }
    return { imports };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** What loading `root` loads: static imports, type-only ones when `types`, dynamic ones when `dynamic`. */
export function loadedBy(
  graph: ModuleGraph,
  root: string,
  options: { types: boolean; dynamic?: boolean },
): Set<string> {
  const seen = new Set<string>([root]);
  const todo = [root];
  while (todo.length) {
    for (const e of graph.imports.get(todo.pop()!) ?? []) {
      if ((e.typeOnly && !options.types) || (e.dynamic && !options.dynamic) || seen.has(e.to)) continue;
      seen.add(e.to);
      todo.push(e.to);
    }
  }
  return seen;
}

/** One path of imports from `root` to `target` (static imports, type-only included), or null. */
export function importPath(graph: ModuleGraph, root: string, target: string): string[] | null {
  const from = new Map<string, string>();
  const todo = [root];
  const seen = new Set([root]);
  while (todo.length) {
    const m = todo.shift()!;
    if (m === target) {
      const path = [m];
      while (from.has(path[0])) path.unshift(from.get(path[0])!);
      return path;
    }
    for (const e of graph.imports.get(m) ?? []) {
      if (e.dynamic || seen.has(e.to)) continue;
      seen.add(e.to);
      from.set(e.to, m);
      todo.push(e.to);
    }
  }
  return null;
}

/**
 * The import cycles among the modules `include` accepts (static imports, type-only included): each
 * strongly connected component of more than one module, or a module importing itself.
 */
export function importCycles(graph: ModuleGraph, include: (name: string) => boolean): string[][] {
  // Tarjan's algorithm, iterative (the graph is a few hundred modules deep at most, but keep the stack flat).
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const out: string[][] = [];
  let next = 0;
  const successors = (m: string) =>
    (graph.imports.get(m) ?? []).filter((e) => !e.dynamic && include(e.to)).map((e) => e.to);
  for (const start of [...graph.imports.keys()].filter(include).sort()) {
    if (index.has(start)) continue;
    const frames: { m: string; succ: string[]; i: number }[] = [];
    const enter = (m: string) => {
      index.set(m, next);
      low.set(m, next++);
      stack.push(m);
      onStack.add(m);
      frames.push({ m, succ: successors(m), i: 0 });
    };
    enter(start);
    while (frames.length) {
      const f = frames[frames.length - 1];
      if (f.i < f.succ.length) {
        const w = f.succ[f.i++];
        if (!index.has(w)) enter(w);
        else if (onStack.has(w)) low.set(f.m, Math.min(low.get(f.m)!, index.get(w)!));
        continue;
      }
      frames.pop();
      if (frames.length) {
        const parent = frames[frames.length - 1].m;
        low.set(parent, Math.min(low.get(parent)!, low.get(f.m)!));
      }
      if (low.get(f.m) === index.get(f.m)) {
        const component: string[] = [];
        let w: string;
        do {
          w = stack.pop()!;
          onStack.delete(w);
          component.push(w);
        } while (w !== f.m);
        if (component.length > 1 || successors(f.m).includes(f.m)) out.push(component.sort());
      }
    }
  }
  return out;
}

/** The folder of a `src/` module (`src/kv/sessions.ts` → `kv`; a file at the `src/` root → its name). */
export function srcFolder(name: string): string {
  const rest = name.slice("src/".length);
  const slash = rest.indexOf("/");
  return slash < 0 ? rest.replace(/\.ts$/, "") : rest.slice(0, slash);
}

/** Pairs of `src/` folders that import each other (type-only imports included), as `a ↔ b`. */
export function mutualFolders(graph: ModuleGraph): string[] {
  const pairs = new Set<string>();
  for (const [from, edges] of graph.imports) {
    if (!from.startsWith("src/")) continue;
    for (const e of edges) {
      if (e.dynamic || !e.to.startsWith("src/")) continue;
      const a = srcFolder(from), b = srcFolder(e.to);
      if (a !== b) pairs.add(`${a}→${b}`);
    }
  }
  const out: string[] = [];
  for (const p of pairs) {
    const [a, b] = p.split("→");
    if (a < b && pairs.has(`${b}→${a}`)) out.push(`${a} ↔ ${b}`);
  }
  return out.sort();
}

/**
 * The floor of a `src/` module, bottom up (see docs/architecture.md, "Floors"), by its folder; the
 * folders of the layout before issue 19 (`hosting/`, `runtime/`, `sessions/` vocabulary files) are placed
 * too, so the measure compares.
 */
export function floorOf(name: string): number {
  const rest = name.slice("src/".length);
  const rules: [RegExp, number][] = [
    // 0: words and leaves that import nothing of the service: the session vocabulary, the provider definitions
    // (the providers' words: names, config schemas, credential fields, settings, flags), the platform's
    // leaves and the capabilities that keep no state (secrets as bytes, tokens, API key format)
    [/^vocabulary\//, 0],
    [/^providers\/definitions\//, 0],
    [/^(errors|ids|clock|log|text_fields|settings)\.ts$/, 0],
    [/^sessions\/(state|record|end_reasons|events|view)\.ts$/, 0],
    [/^auth\//, 0],
    // the speech code the service and the reference engine (`engine/`) share: the V0 protocol's messages, the
    // voice activity detector, PCM helpers, the espeak-ng binding (the only `src/` the engine imports)
    [/^speech\//, 0],
    // the uploaded avatar drawing's sanitiser and rig (pure: an XML parser and the allow-list)
    [/^avatar_svg\//, 0],
    // 1: the configuration (it reads the provider definitions' settings), and telemetry
    [/^config\.ts$/, 1],
    [/^telemetry\//, 1],
    [/^runtime\/credential_holder\.ts$/, 0],
    // 2: storage
    [/^kv\//, 2],
    // 3: webhook delivery (over the outbox in storage)
    [/^webhooks\//, 3],
    // 4: the worker side: bridges, media plane, session runtime, session worker, the live sessions' figures
    [/^(providers|media|runtime|worker|metrics)\//, 4],
    // 5: the API side and the fleet: the session service, placement and routing, leases
    [/^(sessions|fleet|hosting|avatars)\//, 5],
    // 6: the HTTP surfaces
    [/^(api|demo)\//, 6],
    // 7: composition
    [/^app\//, 7],
    [/^lifecycle\.ts$/, 7],
  ];
  for (const [re, floor] of rules) if (re.test(rest)) return floor;
  throw new Error(`no floor for ${name}`);
}

/** Imports from a `src/` module to one on a higher floor (type-only included), as `from → to`. */
export function upwardImports(graph: ModuleGraph): string[] {
  const out: string[] = [];
  for (const [from, edges] of graph.imports) {
    if (!from.startsWith("src/")) continue;
    for (const e of edges) {
      if (e.dynamic || !e.to.startsWith("src/")) continue;
      if (floorOf(e.to) > floorOf(from)) out.push(`${from} → ${e.to}`);
    }
  }
  return [...new Set(out)].sort();
}

/** Every `.ts` file under `dir` (a path from the repository root). */
export async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string) => {
    for await (const e of Deno.readDir(new URL(d, ROOT))) {
      const p = `${d}/${e.name}`;
      if (e.isDirectory) await walk(p);
      else if (/\.(ts|js)$/.test(e.name) && !e.name.endsWith(".d.ts")) out.push(p);
    }
  };
  await walk(dir);
  return out.sort();
}

if (import.meta.main) {
  const entries = Deno.args.length
    ? Deno.args
    : ["src/api/app.ts", "src/sessions/service.ts", "cli/main.ts", "main.ts"];
  const src = await filesUnder("src");
  const graph = await readModuleGraph([...entries, ...src]);
  const local = (s: Set<string>) => [...s].filter((n) => !n.includes(":")).length;
  console.log("modules loaded (local, static imports; runtime only / with types):");
  for (const e of entries) {
    const runtime = loadedBy(graph, e, { types: false });
    const all = loadedBy(graph, e, { types: true });
    const media = [...all].filter((n) => n.startsWith("src/media/")).length;
    const npm = [...all].filter((n) => /^npm:(ws|@resvg\/resvg-wasm)$|^node:dgram$/.test(n));
    console.log(
      `  ${e}: ${local(runtime)} / ${local(all)} (src/media: ${media}; ${
        npm.join(", ") || "no ws, resvg, dgram"
      })`,
    );
  }
  const cycles = importCycles(graph, (n) => n.startsWith("src/"));
  console.log(`import cycles in src/ (type-only included): ${cycles.length}`);
  for (const c of cycles) console.log(`  ${c.join(" ↔ ")}`);
  const mutual = mutualFolders(graph);
  console.log(`src/ folder pairs importing each other: ${mutual.length}`);
  for (const m of mutual) console.log(`  ${m}`);
  const up = upwardImports(graph);
  console.log(`upward imports (to a higher floor): ${up.length}`);
  for (const u of up) console.log(`  ${u}`);
}
