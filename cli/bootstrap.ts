/**
 * `admin bootstrap`: mints a project's first API key straight into the configured KV (no API call).
 *
 * @module
 */
import { isScope, type Scope, SCOPES } from "../src/auth/scopes.ts";
import { PROJECT_ID_PATTERN } from "../src/ids.ts";
import { createApiKey } from "../src/kv/api_keys.ts";
import { displayNameProblem } from "../src/text_fields.ts";
import { UsageError } from "./usage_error.ts";

/** What bootstrap prints (with `--json`, exactly this object). */
export interface BootstrapResult {
  /** The project the key belongs to. */
  project_id: string;
  /** The new key's id (`svc_key_…`). */
  key_id: string;
  /** The key's plaintext, printed this once. */
  api_key: string;
  /** The scopes the key holds. */
  scopes: Scope[];
}

export { UsageError } from "./usage_error.ts";

/** Validates bootstrap arguments. */
export function parseBootstrapInput(input: { project?: string; name?: string; scopes?: string[] }): {
  projectId: string;
  name: string;
  scopes: Scope[];
} {
  if (!input.project) throw new UsageError("--project <project_id> is required");
  if (!PROJECT_ID_PATTERN.test(input.project)) {
    throw new UsageError(
      "--project must be 1..128 characters of A-Z a-z 0-9 _ . : - starting with a letter or digit",
    );
  }
  if (!input.name) throw new UsageError("--name <name> is required");
  const nameProblem = displayNameProblem(input.name);
  if (nameProblem) throw new UsageError(`--name ${nameProblem}`);
  const scopes = input.scopes?.length ? input.scopes : [...SCOPES];
  const unknown = scopes.filter((s) => !isScope(s));
  if (unknown.length) {
    throw new UsageError(`unknown scope(s): ${unknown.join(", ")} (known: ${SCOPES.join(", ")})`);
  }
  return { projectId: input.project, name: input.name, scopes: [...new Set(scopes)] as Scope[] };
}

/** Mints the key. */
export async function bootstrap(
  kv: Deno.Kv,
  input: { projectId: string; name: string; scopes: Scope[] },
  now: number,
): Promise<BootstrapResult> {
  const { record, plaintext } = await createApiKey(kv, { ...input, now, createdBy: "bootstrap" });
  return { project_id: record.project_id, key_id: record.key_id, api_key: plaintext, scopes: record.scopes };
}
