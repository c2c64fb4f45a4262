/**
 * `webhooks secret get|rotate`: reads or rotates a project's webhook signing secret straight in the
 * configured KV (`SVC_KV`), like `admin bootstrap` (no API call, no API key needed: KV access is the
 * operator's credential). Self-contained so the CLI's dispatcher only needs one line for it.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { loadConfigFromEnv } from "../src/config.ts";
import { PROJECT_ID_PATTERN } from "../src/ids.ts";
import { getOrCreateWebhookSecret, rotateWebhookSecret } from "../src/kv/webhook_secrets.ts";
import { openKv } from "../src/server.ts";
import { secretView } from "../src/api/routes/webhooks.ts";
import { UsageError } from "./admin_bootstrap.ts";

/** Help of the command. */
export const WEBHOOKS_SECRET_HELP =
  `Usage: deno task cli webhooks secret <get|rotate> --project <project_id> [--json]

Reads (creating it on first use) or rotates a project's webhook signing secret in the configured
Deno KV (SVC_KV, default .data/svc.kv). After a rotation, deliveries carry signatures with both the
new and the previous secret for 24 hours.

Options:
  --project <id>    project id
  --json            print {"project_id","secret","previous_secret","previous_valid_until",
                    "created_at","rotated_at"} as JSON
  -h, --help        show this help
`;

/** Runs `webhooks …` with the arguments after `webhooks`; returns the exit code. Throws usage errors. */
export async function runWebhooksCommand(args: string[]): Promise<number> {
  const [noun, verb, ...rest] = args;
  if (noun !== "secret" || (verb !== "get" && verb !== "rotate")) {
    if ([noun, verb].some((a) => a === "--help" || a === "-h")) {
      console.log(WEBHOOKS_SECRET_HELP);
      return 0;
    }
    throw new UsageError(
      `expected 'webhooks secret get' or 'webhooks secret rotate'\n\n${WEBHOOKS_SECRET_HELP}`,
    );
  }
  const { values } = parseArgs({
    args: rest,
    options: {
      project: { type: "string" },
      json: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
    strict: true,
  });
  if (values.help) {
    console.log(WEBHOOKS_SECRET_HELP);
    return 0;
  }
  if (!values.project) throw new UsageError("--project <project_id> is required");
  if (!PROJECT_ID_PATTERN.test(values.project)) throw new UsageError("--project is not a valid project id");
  const config = loadConfigFromEnv();
  const kv = await openKv(config.kv);
  try {
    const now = Date.now();
    const rec = verb === "get"
      ? await getOrCreateWebhookSecret(kv, values.project, now)
      : await rotateWebhookSecret(kv, values.project, now);
    const view = { project_id: values.project, ...secretView(rec, now) };
    if (values.json) console.log(JSON.stringify(view));
    else {
      console.log(
        `${verb === "rotate" ? "Rotated the" : "The"} webhook signing secret of ${values.project}:`,
      );
      console.log(view.secret);
      if (view.previous_secret) {
        console.log(
          `Previous secret (still signing until ${new Date(view.previous_valid_until!).toISOString()}):`,
        );
        console.log(view.previous_secret);
      }
    }
    return 0;
  } finally {
    kv.close();
  }
}
