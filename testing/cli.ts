/**
 * Runs the operators' CLI as a subprocess (`deno task --quiet cli …`) with a clean environment: only what
 * Deno needs to find its cache, plus the variables a test passes.
 *
 * @module
 */

const ROOT = new URL("../", import.meta.url);

/** What a CLI run printed and returned. */
export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** The variables a CLI subprocess inherits (Deno's cache location), never the caller's SVC_* ones. */
export function baseEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ["PATH", "HOME", "DENO_DIR", "XDG_CACHE_HOME", "TMPDIR"]) {
    const value = Deno.env.get(name);
    if (value !== undefined) env[name] = value;
  }
  return env;
}

/** Runs `deno task cli <args>`; `stdin` is written to its standard input. */
export async function runCli(
  args: string[],
  options: { env?: Record<string, string>; stdin?: string } = {},
): Promise<CliResult> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["task", "--quiet", "cli", ...args],
    cwd: ROOT,
    clearEnv: true,
    env: { ...baseEnv(), ...options.env },
    stdin: options.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (options.stdin !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(options.stdin));
    await writer.close();
  }
  const out = await child.output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}
