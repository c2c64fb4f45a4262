/**
 * How a failed API call is reported on standard error: the code and message on the first line, then the
 * request id, the error reference link and, for retryable errors, when to retry. What the service sent is
 * printed through {@link printable}.
 *
 * @module
 */
import picocolors from "picocolors";
import type { ApiError } from "@avatar-svc/sdk";
import type { Io } from "./io.ts";
import { printable } from "./printable.ts";

/** Writes the report of `err` to standard error; `extra` lines are appended (e.g. how to retry). */
export function reportApiError(io: Io, err: ApiError, extra: string[] = []): void {
  const c = picocolors.createColors(io.stderrIsTerminal && !io.noColor);
  const lines = [`${c.red("error")}: ${printable(err.code)}: ${printable(err.message)}`];
  if (err.status) lines.push(`  status: ${err.status}`);
  lines.push(
    `  request_id: ${
      err.requestId === null ? "(none: no answer from the service)" : printable(err.requestId)
    }`,
  );
  if (err.docUrl) lines.push(`  doc_url: ${printable(err.docUrl)}`);
  if (err.retryAfter !== null) lines.push(`  retry_after: ${err.retryAfter} s`);
  lines.push(...extra.map((l) => `  ${l}`));
  io.stderr(`${lines.join("\n")}\n`);
}
