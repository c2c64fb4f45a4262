/**
 * Structured JSON-lines logger. Callers pass only non-secret fields; credential holders redact
 * themselves if passed by mistake, and request logging never includes headers or bodies.
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
}

/** Where finished log lines go. */
export type LogSink = (line: string) => void;

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
  const sink = options.sink ?? ((line: string) => console.log(line));
  const now = options.now ?? Date.now;
  const write = (level: LogLevel) => (msg: string, fields?: Record<string, unknown>) => {
    if (ORDER[level] < min) return;
    sink(JSON.stringify({ ts: new Date(now()).toISOString(), level, msg, ...fields }));
  };
  return { debug: write("debug"), info: write("info"), warn: write("warn"), error: write("error") };
}

/** A logger that drops everything. */
export const silentLogger: Logger = createLogger({ sink: () => {} });
