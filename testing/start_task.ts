/**
 * How `deno task start` starts the service, read from deno.json: the environment its command line sets
 * (`GLIBC_TUNABLES`) and the Deno flags before `main.ts`. Tests that judge the service "as started" (the
 * credential memory scan) run it exactly so, and follow the task when it changes.
 *
 * @module
 */

/** The start task's launch: environment assignments and the flags of `deno run` before `main.ts`. */
export interface StartTaskLaunch {
  env: Record<string, string>;
  /** Its permission flags (`-A`, `--allow-…`, `--deny-…`). */
  permissions: string[];
  /** Its other flags (e.g. `--v8-flags=…`). */
  flags: string[];
}

/**
 * Parses the last command of deno.json's `start` task (`NAME=value … deno run <flags> main.ts`); throws
 * when it is not of that shape.
 */
export async function startTaskLaunch(root = new URL("..", import.meta.url)): Promise<StartTaskLaunch> {
  const deno = JSON.parse(await Deno.readTextFile(new URL("deno.json", root)));
  const task = String(deno.tasks?.start ?? "");
  const words = task.split("&&").at(-1)!.trim().split(/\s+/);
  const env: Record<string, string> = {};
  let i = 0;
  for (; i < words.length && /^[A-Z_][A-Z0-9_]*=/.test(words[i]); i++) {
    const eq = words[i].indexOf("=");
    env[words[i].slice(0, eq)] = words[i].slice(eq + 1);
  }
  if (words[i] !== "deno" || words[i + 1] !== "run" || words.at(-1) !== "main.ts") {
    throw new Error(`deno.json's start task does not end in "[NAME=value …] deno run … main.ts": ${task}`);
  }
  const all = words.slice(i + 2, -1);
  const permission = (f: string) => f === "-A" || /^--(allow|deny)-/.test(f);
  return { env, permissions: all.filter(permission), flags: all.filter((f) => !permission(f)) };
}
