/**
 * `webhooks secret <get|rotate>`: reads (creating it on first use) or rotates a project's webhook signing
 * secret straight in the configured KV (`SVC_KV`), like `admin bootstrap`: no API call and no API key, KV
 * access is the operator's credential. (The same secret is reachable over the API at
 * `GET /v1/webhooks/secret` and `POST /v1/webhooks/secret/rotate`.)
 *
 * @module
 */
import { secretView } from "../../src/api/routes/webhooks.ts";
import { loadConfigFromEnv } from "../../src/config.ts";
import { PROJECT_ID_PATTERN } from "../../src/ids.ts";
import { getOrCreateWebhookSecret, rotateWebhookSecret } from "../../src/kv/webhook_secrets.ts";
import { openKv } from "../../src/kv/open.ts";
import type { CommandSpec } from "../command.ts";
import { UsageError } from "../usage_error.ts";

/** `webhooks secret`. */
export const webhooksSecret: CommandSpec = {
  path: ["webhooks", "secret"],
  summary: "Read (get) or rotate a project's webhook signing secret in the configured KV (SVC_KV)",
  positionals: [{ name: "action", help: "get (creates the secret on first use) or rotate" }],
  description:
    "Works straight on the configured Deno KV (SVC_KV, default .data/svc.kv), like admin bootstrap. After a rotation, deliveries carry signatures with both the new and the previous secret for 24 hours.",
  options: [
    { name: "project", type: "string", arg: "<id>", help: "project id" },
    {
      name: "json",
      type: "boolean",
      help:
        'print {"project_id","secret","previous_secret","previous_valid_until","created_at","rotated_at"}',
    },
  ],
  examples: [
    "deno task cli webhooks secret get --project proj_demo",
    "deno task cli webhooks secret rotate --project proj_demo --json",
  ],
  async run({ values, positionals }, io) {
    const [action] = positionals;
    if (action !== "get" && action !== "rotate") throw new UsageError("the action must be get or rotate");
    const project = values.project as string | undefined;
    if (!project) throw new UsageError("--project <project_id> is required");
    if (!PROJECT_ID_PATTERN.test(project)) throw new UsageError("--project is not a valid project id");
    const config = loadConfigFromEnv();
    const kv = await openKv(config.kv);
    try {
      const now = Date.now();
      const rec = action === "get"
        ? await getOrCreateWebhookSecret(kv, project, now)
        : await rotateWebhookSecret(kv, project, now);
      const view = { project_id: project, ...secretView(rec, now) };
      if (values.json) {
        io.stdout(`${JSON.stringify(view)}\n`);
        return 0;
      }
      io.stdout(
        `${
          action === "rotate" ? "Rotated the" : "The"
        } webhook signing secret of ${project}:\n${view.secret}\n`,
      );
      if (view.previous_secret) {
        io.stdout(
          `Previous secret (still signing until ${
            new Date(view.previous_valid_until!).toISOString()
          }):\n${view.previous_secret}\n`,
        );
      }
      return 0;
    } finally {
      kv.close();
    }
  },
};
