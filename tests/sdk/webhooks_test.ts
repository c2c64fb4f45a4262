/**
 * The SDK's webhook verifier, as a customer's receiver uses it: in Node 20 through the package's
 * `./webhooks` subpath, on deliveries signed by the service's own signer.
 */
import assert from "node:assert/strict";
import { generateWebhookSecret, webhookHeaders } from "../../src/webhooks/sign.ts";
import { verifyWebhook as verifyFromSdk, WebhookVerificationError } from "@avatar-svc/sdk";
import { installSdk } from "../../testing/npm_package.ts";

const PROGRAM = `
import { verifyWebhook, WebhookVerificationError } from "@PKG@/webhooks";
const { secret, headers, body } = JSON.parse(process.env.DELIVERY);
const ok = await verifyWebhook({ secret, headers, body });
let tampered = null;
try {
  await verifyWebhook({ secret, headers, body: body.replace("ended", "failed") });
} catch (err) {
  tampered = { name: err.name, instance: err instanceof WebhookVerificationError, leaks: err.message.includes(secret) };
}
console.log(JSON.stringify({ ok, tampered }));
`;

async function delivery() {
  const secret = generateWebhookSecret();
  const body = JSON.stringify({ type: "session.ended", data: { status: "ended" } });
  const headers = await webhookHeaders([secret], "msg_1_end", Math.floor(Date.now() / 1000), body);
  return { secret, headers: Object.fromEntries(new Headers(headers)), body };
}

Deno.test("sdk webhooks: verifies the service's signatures in Deno and refuses tampered bodies", async () => {
  const d = await delivery();
  const ok = await verifyFromSdk({ secret: d.secret, headers: d.headers, body: d.body });
  assert.equal(ok.id, "msg_1_end");
  await assert.rejects(
    () => verifyFromSdk({ secret: d.secret, headers: d.headers, body: d.body + " " }),
    WebhookVerificationError,
  );
  await assert.rejects(
    () => verifyFromSdk({ secret: generateWebhookSecret(), headers: d.headers, body: d.body }),
    WebhookVerificationError,
  );
});

Deno.test("sdk webhooks: Node 20 imports @avatar-svc/sdk/webhooks and verifies a delivery", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sdk_webhooks_" });
  try {
    const name = await installSdk(dir);
    await Deno.writeTextFile(`${dir}/program.mjs`, PROGRAM.replace("@PKG@", name));
    const d = await delivery();
    const out = await new Deno.Command("node", {
      args: ["program.mjs"],
      cwd: dir,
      env: { DELIVERY: JSON.stringify(d) },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    const result = JSON.parse(new TextDecoder().decode(out.stdout));
    assert.equal(result.ok.id, "msg_1_end");
    assert.deepEqual(result.tampered, { name: "WebhookVerificationError", instance: true, leaks: false });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
