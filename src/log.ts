/**
 * Structured JSON-lines logger. Callers pass only non-secret fields; credential holders redact
 * themselves if passed by mistake, and request logging never includes headers or bodies.
 *
 * The default sink writes to stdout in batches (every 20 ms), instead of one synchronous
 * `console.log` per line (~11–18 µs each here, more than a bare HTTP request costs); see
 * {@link batchedStdoutSink}.
 *
 * @module
 */

/** Log levels in increasing severity. */
export type LogLevel = "debug" | "info" | "warn" | "error";
const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** A structured logger. */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** Whether lines of `level` are written (to skip building the fields of a line that would be dropped). */
  enabled(level: LogLevel): boolean;
}

/** Where finished log lines go. A sink with `flush` buffers; `warn` and `error` lines call it. */
export type LogSink = ((line: string) => void) & { flush?: () => void };

/** Writes everything or throws (a pipe may take a large buffer in several writes). */
function writeAllSync(bytes: Uint8Array): void {
  for (let off = 0; off < bytes.length;) off += Deno.stdout.writeSync(bytes.subarray(off));
}

/**
 * A sink that batches lines and writes them to stdout together: `flushMs` (20 ms) after the first line
 * of a batch, at once past 64 KiB, and at once for `flush()` (called for `warn` and `error` lines, which
 * so go out with everything logged before them). What is pending is written when the process exits (the
 * `unload` event, which `Deno.exit` dispatches). Under load this is one write for hundreds of access-log
 * lines, instead of one synchronous `console.log` per line. The timer does not keep the process alive. A
 * failed write (stdout closed) drops the batch.
 *
 * Meant for service processes: in a test, give the logger a sink of its own (a pending timer at the end of
 * a test is an unfinished operation to the test sanitizer).
 */
export function batchedStdoutSink(
  options: { flushMs?: number; write?: (bytes: Uint8Array) => void } = {},
): LogSink {
  const flushMs = options.flushMs ?? 20;
  const write = options.write ?? writeAllSync;
  const encoder = new TextEncoder();
  let pending = "";
  let timer: ReturnType<typeof setTimeout> | null = null;
  const flush = () => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    if (!pending) return;
    const text = pending;
    pending = "";
    try {
      write(encoder.encode(text));
    } catch {
      // stdout is gone: nothing useful can be done with a log line
    }
  };
  const sink = (line: string) => {
    pending += line + "\n";
    if (pending.length > 65_536) flush();
    else if (timer === null) {
      timer = setTimeout(flush, flushMs);
      Deno.unrefTimer(timer as unknown as number);
    }
  };
  globalThis.addEventListener("unload", flush);
  return Object.assign(sink, { flush });
}

/**
 * Creates a logger writing one JSON object per line.
 *
 * @example Usage
 * ```ts
 * import { createLogger } from "./log.ts";
 * const lines: string[] = [];
 * const log = createLogger({ level: "info", sink: (l) => lines.push(l) });
 * log.info("session active", { session_id: "session:abc" });
 * ```
 */
export function createLogger(
  options: { level?: LogLevel; sink?: LogSink; now?: () => number } = {},
): Logger {
  const min = ORDER[options.level ?? "info"];
  const sink = options.sink ?? batchedStdoutSink();
  const now = options.now ?? Date.now;
  // The ISO time of the last millisecond seen (many lines share one under load).
  let lastMs = NaN;
  let lastIso = "";
  const write = (level: LogLevel) => {
    const urgent = ORDER[level] >= ORDER.warn;
    const head = `","level":"${level}","msg":`;
    return (msg: string, fields?: Record<string, unknown>) => {
      if (ORDER[level] < min) return;
      const t = now();
      if (t !== lastMs) {
        lastMs = t;
        lastIso = new Date(t).toISOString();
      }
      // The line is `{ts, level, msg, ...fields}`, built without copying `fields` into a new object.
      let line: string;
      if (fields === undefined) line = `{"ts":"${lastIso}${head}${JSON.stringify(msg)}}`;
      else if ("ts" in fields || "level" in fields || "msg" in fields) {
        line = JSON.stringify({ ts: lastIso, level, msg, ...fields });
      } else {
        const rest = JSON.stringify(fields);
        line = `{"ts":"${lastIso}${head}${JSON.stringify(msg)}${rest.length > 2 ? "," + rest.slice(1) : "}"}`;
      }
      sink(line);
      if (urgent) sink.flush?.();
    };
  };
  return {
    debug: write("debug"),
    info: write("info"),
    warn: write("warn"),
    error: write("error"),
    enabled: (level) => ORDER[level] >= min,
  };
}

/** A logger that drops everything. */
export const silentLogger: Logger = createLogger({ sink: () => {} });
