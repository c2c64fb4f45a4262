/**
 * The shape of a CLI command and the one way every command's arguments are parsed (`node:util`
 * `parseArgs`, strict) and its `--help` is rendered, both from the same option list.
 *
 * @module
 */
import { parseArgs } from "node:util";
import type { Io } from "./io.ts";
import { UsageError } from "./usage_error.ts";

/** One `--flag` of a command. */
export interface OptionSpec {
  /** Long name, without `--`. */
  name: string;
  /** `string` takes a value; `boolean` does not. */
  type: "string" | "boolean";
  /** One-letter alias. */
  short?: string;
  /** Whether the flag may repeat (values are collected in order). */
  multiple?: boolean;
  /** Placeholder of the value in the help, e.g. `<url>`. */
  arg?: string;
  /** One line of help. */
  help: string;
}

/** Parsed flag values, by long name. */
export type Values = Record<string, string | boolean | string[] | undefined>;

/** One command, e.g. `keys create`. */
export interface CommandSpec {
  /** Group and name, e.g. `["keys", "create"]`. */
  path: readonly [string, string];
  /** One line for the command lists. */
  summary: string;
  /** Required positional arguments, in order (e.g. `session_id`). */
  positionals?: readonly { name: string; help: string }[];
  /** The flags. `--help` is added to every command. */
  options: readonly OptionSpec[];
  /** Paragraphs after the usage line. */
  description?: string;
  /** Example command lines. */
  examples?: readonly string[];
  /** A fixed help text instead of the rendered one. */
  help?: string;
  /** Runs the command; returns the exit code. */
  run(input: { values: Values; positionals: string[] }, io: Io): Promise<number>;
}

const HELP_OPTION: OptionSpec = { name: "help", type: "boolean", short: "h", help: "show this help" };

/** Renders a command's `--help`. */
export function renderHelp(spec: CommandSpec): string {
  if (spec.help) return spec.help;
  const positionals = (spec.positionals ?? []).map((p) => ` <${p.name}>`).join("");
  const lines = [`Usage: deno task cli ${spec.path.join(" ")}${positionals} [options]`, "", spec.summary];
  if (spec.description) lines.push("", spec.description);
  const options = [...spec.options, HELP_OPTION];
  const label = (o: OptionSpec) =>
    `${o.short ? `-${o.short}, ` : "    "}--${o.name}${o.arg ? ` ${o.arg}` : ""}${o.multiple ? "..." : ""}`;
  const width = Math.max(
    ...options.map((o) => label(o).length),
    ...(spec.positionals ?? []).map((p) => p.name.length + 2),
  );
  if (spec.positionals?.length) {
    lines.push("", "Arguments:");
    for (const p of spec.positionals) lines.push(`  ${`<${p.name}>`.padEnd(width)}  ${p.help}`);
  }
  lines.push("", "Options:");
  for (const o of options) lines.push(`  ${label(o).padEnd(width)}  ${o.help}`);
  if (spec.examples?.length) {
    lines.push("", "Examples:");
    for (const e of spec.examples) lines.push(`  ${e}`);
  }
  return lines.join("\n") + "\n";
}

/**
 * Parses `args` for `spec`. Never echoes an argument's value in an error (values may be credentials):
 * parseArgs' "Unexpected argument '<value>'" is replaced.
 */
export function parseCommandArgs(spec: CommandSpec, args: string[]): {
  values: Values;
  positionals: string[];
} {
  const options: Record<string, { type: "string" | "boolean"; short?: string; multiple?: boolean }> = {};
  for (const o of [...spec.options, HELP_OPTION]) {
    options[o.name] = { type: o.type, ...(o.short ? { short: o.short } : {}), multiple: o.multiple ?? false };
  }
  const expected = spec.positionals ?? [];
  let parsed;
  try {
    parsed = parseArgs({ args, options, strict: true, allowPositionals: expected.length > 0 });
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL") {
      throw new UsageError(
        `${spec.path.join(" ")} takes no positional arguments (is a flag name missing before a value?)`,
      );
    }
    throw err;
  }
  const values = parsed.values as Values;
  if (values.help) return { values, positionals: parsed.positionals };
  if (parsed.positionals.length > expected.length) {
    throw new UsageError(
      `${spec.path.join(" ")} takes ${expected.length} argument(s): ${
        expected.map((p) => `<${p.name}>`).join(" ")
      } (is a flag name missing before a value?)`,
    );
  }
  const missing = expected.slice(parsed.positionals.length);
  if (missing.length) {
    throw new UsageError(`${spec.path.join(" ")}: <${missing[0].name}> is required`);
  }
  return { values, positionals: parsed.positionals };
}

/** Parses and runs a command (printing its help for `--help`); returns the exit code. */
export async function runCommand(spec: CommandSpec, args: string[], io: Io): Promise<number> {
  const input = parseCommandArgs(spec, args);
  if (input.values.help) {
    io.stdout(renderHelp(spec));
    return 0;
  }
  return await spec.run(input, io);
}
