/**
 * The error of a wrong command line (exit code 2).
 *
 * @module
 */

/** A usage error: unknown command, bad or missing flag, unreadable `--config` file (exit code 2). */
export class UsageError extends Error {
  /** Always `"UsageError"`. */
  override name = "UsageError";
}
