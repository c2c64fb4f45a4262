/**
 * The error reference, generated from the catalog: the HTML page served at `/docs/errors` (each code's
 * `doc_url` points at its row) and `docs/errors.md`.
 *
 * @module
 */
import { ERROR_CATALOG, type ErrorCode, type ErrorSpec } from "../errors.ts";

const codes = () => Object.keys(ERROR_CATALOG) as ErrorCode[];
const retry = (e: ErrorSpec) => (e.retryable ? `yes (default ${e.retryAfter} s)` : "no");

function escapeHtml(s: string): string {
  return s.replace(
    /[&<>"']/g,
    (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[ch]!,
  );
}

const INTRO =
  "Every 4xx and 5xx answer has the body `{code, message, request_id, doc_url, retry_after?}`. `request_id` is a UUID equal to the `X-Request-Id` response header. `retry_after` (1..3600 s) and the `Retry-After` header are present exactly for the retryable codes: wait that long, with jitter, then retry. Messages are provider-agnostic and never contain credentials, hostnames, IP addresses or stack traces. Codes marked *added* are this service's own; the others come from the interface specification.";

/** The error reference as an HTML page. */
export function errorReferenceHtml(): string {
  const rows = codes().map((code) => {
    const e: ErrorSpec = ERROR_CATALOG[code];
    return `<tr id="${code.toLowerCase()}"><td><code>${code}</code></td><td>${e.status}</td><td>${
      retry(e)
    }</td><td>${e.spec ? "spec" : "added"}</td><td>${escapeHtml(e.when)}</td></tr>`;
  }).join("\n");
  const intro = escapeHtml(INTRO).replace(/`([^`]+)`/g, "<code>$1</code>").replace(
    /\*([^*]+)\*/g,
    "<em>$1</em>",
  );
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Error reference</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.4rem .6rem;vertical-align:top;text-align:left}tr:target{background:#fff6d0}</style>
</head><body>
<h1>Error reference</h1>
<p>${intro}</p>
<table><thead><tr><th>code</th><th>status</th><th>retryable</th><th>origin</th><th>when</th></tr></thead><tbody>
${rows}
</tbody></table></body></html>
`;
}

/** The error reference as Markdown (`docs/errors.md`). */
export function errorReferenceMarkdown(): string {
  const rows = codes().map((code) => {
    const e: ErrorSpec = ERROR_CATALOG[code];
    return `| \`${code}\` | ${e.status} | ${retry(e)} | ${e.spec ? "spec" : "added"} | ${
      e.when.replace(/\|/g, "\\|")
    } |`;
  });
  return `# Error reference

<!-- Generated from src/errors.ts by \`deno task openapi\`; do not edit by hand. -->

${INTRO}

The service serves this table at \`/docs/errors\`; each code's \`doc_url\` is \`<SVC_DOCS_URL>/errors#<code in lower case>\`.

| code | status | retryable | origin | when |
|---|---|---|---|---|
${rows.join("\n")}
`;
}
