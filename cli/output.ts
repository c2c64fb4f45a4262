/**
 * Terminal output of the API commands: exact JSON (`--json`), a boxed table for lists and an aligned
 * key/value list for one object. Tables are drawn by cli-table3 (Unicode-width aware); colour comes from
 * picocolors and is on only when standard output is a terminal and `NO_COLOR` is unset. Every value is
 * printed through {@link printable} (JSON through {@link printableJson}): text from the service never
 * reaches the terminal with controls, bidi overrides or invisible characters in it.
 *
 * @module
 */
import Table from "cli-table3";
import picocolors from "picocolors";
import type { Io } from "./io.ts";
import { printable, printableJson } from "./printable.ts";

/**
 * Prints `value` as JSON: indented on a terminal, one line otherwise (for pipes and scripts). Hidden
 * characters in strings are written as `\uXXXX` escapes: the same JSON value, plain to the eye.
 */
export function printJson(io: Io, value: unknown): void {
  io.stdout(`${printableJson(value, io.stdoutIsTerminal ? 2 : undefined)}\n`);
}

/** The colours for standard output. */
function colours(io: Io) {
  return picocolors.createColors(io.stdoutIsTerminal && !io.noColor);
}

/** Prints a boxed table with a header row. A cell given as an array prints one line per item. */
export function printTable(io: Io, head: string[], rows: (string | string[])[][]): void {
  io.stdout(`${renderTable(io, head, rows)}\n`);
}

/** No rule between rows: one line a row (long lists, `--watch` screens). */
const COMPACT_CHARS = { mid: "", "left-mid": "", "mid-mid": "", "right-mid": "" };

/**
 * A table as text: boxed with a header row; `compact` leaves out the rules between rows, so each row is
 * one line.
 */
export function renderTable(
  io: Io,
  head: string[],
  rows: (string | string[])[][],
  options: { compact?: boolean } = {},
): string {
  const c = colours(io);
  const table = new Table({
    head: head.map((h) => c.bold(h)),
    style: { head: [], border: [] },
    ...(options.compact ? { chars: COMPACT_CHARS } : {}),
  });
  table.push(
    ...rows.map((row) =>
      row.map((cell) => typeof cell === "string" ? printable(cell) : cell.map(printable).join("\n"))
    ),
  );
  return table.toString();
}

/** Prints one object as aligned `label  value` lines; rows whose value is `undefined` are left out. */
export function printDetails(io: Io, rows: [string, string | undefined][]): void {
  const c = colours(io);
  const shown = rows.filter((r): r is [string, string] => r[1] !== undefined);
  const width = Math.max(...shown.map(([label]) => label.length));
  io.stdout(shown.map(([label, value]) => `${c.bold(label.padEnd(width))}  ${printable(value)}\n`).join(""));
}

/** An epoch-milliseconds time as ISO 8601 (UTC); `-` for null or undefined. */
export function formatTime(ms: number | null | undefined): string {
  return typeof ms === "number" ? new Date(ms).toISOString() : "-";
}
