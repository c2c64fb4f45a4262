/**
 * Progress on standard error while something slow runs (a session starting): a yocto-spinner when
 * standard error is a terminal and output is not JSON; otherwise silent, except for retry notices, which
 * are printed as plain lines. Texts go through {@link printable} (they may quote the service).
 *
 * @module
 */
import yoctoSpinner from "yocto-spinner";
import type { Io } from "./io.ts";
import { printable } from "./printable.ts";

/** A running progress display. */
export interface Progress {
  /** Shows a notice (a retry wait): as the spinner's text, or as a line on standard error. */
  note(text: string): void;
  /** Stops with a success line. */
  succeed(text: string): void;
  /** Stops and clears the line (the error report follows on its own). */
  stop(): void;
}

/**
 * Starts a progress display with `text`; with `enabled` false nothing spins and only notices are printed.
 */
export function startProgress(io: Io, text: string, enabled: boolean): Progress {
  if (!enabled) {
    return {
      note(text) {
        io.stderr(`${printable(text)}\n`);
      },
      succeed() {},
      stop() {},
    };
  }
  const spinner = yoctoSpinner({ text, color: "cyan" }).start();
  return {
    note(text) {
      spinner.text = printable(text);
    },
    succeed(text) {
      spinner.success(printable(text));
    },
    stop() {
      spinner.stop();
    },
  };
}

/** Whether a spinner should run: standard error is a terminal and the output is not JSON. */
export function progressEnabled(io: Io, json: boolean): boolean {
  return io.stderrIsTerminal && !json;
}
