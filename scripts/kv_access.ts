/**
 * Where code outside the storage floor touches Deno KV itself: every property of a value the type checker
 * types as `Deno.Kv` or `Deno.AtomicOperation` (`kv.get(…)`, `kv.atomic()`, `kv["list"]`, a method taken
 * as a value, a destructured `{ get } = kv`), found by the TypeScript compiler's checker over the given
 * files — so a renamed variable, a parameter, a field or a value returned by a function is found as well as
 * a variable called `kv`. `docs/architecture.md` ("Floors") allows such access in `src/kv/` and in the
 * composition root; `tests/architecture/kv_access_test.ts` holds every other `src/` file to it.
 *
 * Deno's own declarations come from `deno types` (this Deno's, unstable KV included); npm imports are left
 * unresolved (their values type as `any` and never match).
 *
 * @module
 */
import ts from "typescript";

/** One access: `file:line:column name` (paths as given). */
export type KvAccess = string;

/** The Deno namespace's KV classes a property access on counts. */
const KV_TYPES = new Set(["Kv", "AtomicOperation"]);

/** Writes this Deno's declarations (`deno types`) to a temporary file; returns its path. */
async function denoTypesFile(): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), { args: ["types"], stdout: "piped", stderr: "null" })
    .output();
  if (!out.success) throw new Error("deno types failed");
  const path = await Deno.makeTempFile({ prefix: "deno_types_", suffix: ".d.ts" });
  await Deno.writeFile(path, out.stdout);
  return path;
}

/** Whether `type` is (a union member of) `Deno.Kv` or `Deno.AtomicOperation`. */
function isKvType(type: ts.Type): boolean {
  if (type.isUnion()) return type.types.some(isKvType);
  const symbol = type.getSymbol() ?? type.aliasSymbol;
  if (!symbol || !KV_TYPES.has(symbol.getName())) return false;
  // Declared inside `declare namespace Deno { … }`.
  return (symbol.declarations ?? []).some((d) => {
    for (let p: ts.Node | undefined = d.parent; p; p = p.parent) {
      if (ts.isModuleDeclaration(p) && p.name.getText() === "Deno") return true;
    }
    return false;
  });
}

/** Every access to a member of a Deno KV value in `files` (repository-relative paths under `root`). */
export async function kvAccesses(root: string, files: string[]): Promise<KvAccess[]> {
  const types = await denoTypesFile();
  try {
    const program = ts.createProgram([types, ...files.map((f) => `${root}/${f}`)], {
      noEmit: true,
      allowImportingTsExtensions: true,
      target: ts.ScriptTarget.ESNext,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      lib: ["lib.esnext.d.ts"],
      types: [],
      skipLibCheck: true,
      strict: true,
    });
    const checker = program.getTypeChecker();
    const out: KvAccess[] = [];
    for (const file of files) {
      const source = program.getSourceFile(`${root}/${file}`);
      if (!source) throw new Error(`not in the program: ${file}`);
      const report = (node: ts.Node, name: string) => {
        const { line, character } = source.getLineAndCharacterOfPosition(node.getStart(source));
        out.push(`${file}:${line + 1}:${character + 1} ${name}`);
      };
      const visit = (node: ts.Node): void => {
        if (ts.isPropertyAccessExpression(node) || ts.isElementAccessExpression(node)) {
          if (isKvType(checker.getTypeAtLocation(node.expression))) {
            report(node, ts.isPropertyAccessExpression(node) ? node.name.text : "[…]");
          }
        } else if (ts.isObjectBindingPattern(node) && node.elements.length) {
          if (isKvType(checker.getTypeAtLocation(node))) report(node, "{ … } destructured");
        }
        ts.forEachChild(node, visit);
      };
      visit(source);
    }
    return out;
  } finally {
    await Deno.remove(types).catch(() => {});
  }
}

if (import.meta.main) {
  const root = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
  const files = Deno.args.length ? Deno.args : [];
  for (const a of await kvAccesses(root, files)) console.log(a);
}
