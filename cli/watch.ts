/**
 * `--watch`: redraws one screen in place every interval, like `top`, until Ctrl-C or `--count` refreshes.
 *
 * On a terminal it draws on the alternate screen with the cursor hidden (each refresh overwrites the last,
 * never scrolling), and gives the terminal back as it was on every way out: Ctrl-C, the last refresh, an
 * error. Elsewhere (a pipe, a file) each refresh is printed after the previous one. A refresh that fails
 * with an error worth waiting out (a network error, a retryable error of the service) is reported on the
 * screen and the next one tries again; any other error ends the watch and is reported as usual.
 *
 * @module
 */
import { ApiError } from "@avatar-svc/sdk";
import type { Io } from "./io.ts";
import { printable } from "./printable.ts";

/** Enter the alternate screen, hide the cursor. */
const ENTER = "\x1b[?1049h\x1b[?25l";
/** Show the cursor, leave the alternate screen (the terminal shows what it showed before). */
const LEAVE = "\x1b[?25h\x1b[?1049l";
/** Cursor home. */
const HOME = "\x1b[H";
/** Clear to the end of the line / of the screen. */
const EOL = "\x1b[K";
const EOS = "\x1b[J";

/** What the watch does each refresh. */
export interface WatchOptions {
  /** Seconds between refreshes. */
  intervalS: number;
  /** Stop after this many refreshes (undefined: until Ctrl-C). */
  count?: number;
  /** Redraw in place (on a terminal, not for JSON); otherwise print each refresh after the last. */
  inPlace: boolean;
  /** Reads what the next frame shows (aborted on Ctrl-C). */
  read(signal: AbortSignal): Promise<unknown>;
  /**
   * The frame's lines for what `read` returned (`rows`: the terminal's height, or null off a terminal);
   * `failure` is the last refresh's error while the shown data is older.
   */
  render(data: unknown, rows: number | null, failure: string | null): string[];
}

/** Whether a refresh that failed with `err` is worth another try at the next one. */
function transient(err: unknown): boolean {
  return err instanceof ApiError &&
    (err.retryable || err.code === "SDK_NETWORK_ERROR" || err.code === "SDK_INVALID_RESPONSE");
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
  });
}

/** Runs the watch; resolves with the exit code (0 on Ctrl-C). */
export async function watch(io: Io, o: WatchOptions): Promise<number> {
  const stop = new AbortController();
  const off = io.onInterrupt?.(() => stop.abort());
  const tty = o.inPlace && io.stdoutIsTerminal;
  if (tty) io.stdout(ENTER);
  let data: unknown = undefined;
  try {
    for (let n = 0; o.count === undefined || n < o.count; n++) {
      let failure: string | null = null;
      try {
        data = await o.read(stop.signal);
      } catch (err) {
        if (stop.signal.aborted) break;
        if (!transient(err)) throw err;
        const e = err as ApiError;
        failure = `refresh failed: ${e.code}: ${e.message}`;
        if (data === undefined) data = null;
      }
      const rows = tty ? io.consoleSize?.()?.rows ?? 24 : null;
      const lines = o.render(data, rows, failure === null ? null : printable(failure));
      io.stdout(
        tty ? `${HOME}${lines.map((l) => `${l}${EOL}`).join("\n")}\n${EOS}` : `${lines.join("\n")}\n\n`,
      );
      if (o.count !== undefined && n + 1 >= o.count) break;
      await sleep(o.intervalS * 1000, stop.signal);
      if (stop.signal.aborted) break;
    }
  } finally {
    off?.();
    if (tty) io.stdout(LEAVE);
  }
  return 0;
}
