import assert from "node:assert/strict";
import { Webhook } from "standardwebhooks";
import { generateWebhookSecret, webhookHeaders } from "../../src/webhooks/sign.ts";
import { constantTimeEqual, verifyWebhook, WebhookVerificationError } from "../../src/webhooks/verify.ts";

const body = JSON.stringify({ type: "session.ended", timestamp: "2026-01-01T00:00:00.000Z", data: { x: 1 } });
const now = 1_767_225_600_000;
const ts = Math.floor(now / 1000);

Deno.test("verify: a signed delivery verifies; the secret format is whsec_ + base64 of 32 bytes", async () => {
  const secret = generateWebhookSecret();
  assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
  assert.equal(atob(secret.slice(6)).length, 32);
  const headers = await webhookHeaders([secret], "msg_abc_end", ts, body);
  assert.match(headers["webhook-signature"], /^v1,[A-Za-z0-9+/]{43}=$/);
  assert.deepEqual(await verifyWebhook({ secret, headers, body, now }), { id: "msg_abc_end", timestamp: ts });
  // Headers objects and Uint8Array bodies work too
  await verifyWebhook({ secret, headers: new Headers(headers), body: new TextEncoder().encode(body), now });
});

Deno.test("verify: tampering, another secret, a stale or future timestamp, missing headers all fail", async () => {
  const secret = generateWebhookSecret();
  const headers = await webhookHeaders([secret], "msg_abc_end", ts, body);
  const fails = async (o: Parameters<typeof verifyWebhook>[0], msg: RegExp) => {
    await assert.rejects(
      verifyWebhook(o),
      (e: Error) => e instanceof WebhookVerificationError && msg.test(e.message),
    );
  };
  await fails({ secret, headers, body: body.replace("1", "2"), now }, /no matching signature/);
  await fails({ secret: generateWebhookSecret(), headers, body, now }, /no matching signature/);
  await fails({ secret, headers: { ...headers, "webhook-id": "msg_other_end" }, body, now }, /no matching/);
  await fails({ secret, headers, body, now: now + 301_000 }, /too old/);
  await fails({ secret, headers, body, now: now - 301_000 }, /too new/);
  await fails({ secret, headers: { ...headers, "webhook-signature": "" }, body, now }, /missing/);
  await fails({ secret, headers: { ...headers, "webhook-signature": "v2,abc" }, body, now }, /no v1/);
  await fails({ secret, headers: { ...headers, "webhook-timestamp": "12.5" }, body, now }, /invalid/);
  // within tolerance is fine, and the tolerance is settable
  await verifyWebhook({ secret, headers, body, now: now + 299_000 });
  await fails({ secret, headers, body, now: now + 61_000, toleranceS: 60 }, /too old/);
  // the secret never appears in an error message
  try {
    await verifyWebhook({ secret, headers, body: "x", now });
  } catch (e) {
    assert.ok(!String(e).includes(secret.slice(6)));
  }
});

Deno.test("verify: during a rotation either signature matches; either secret verifies", async () => {
  const [oldS, newS] = [generateWebhookSecret(), generateWebhookSecret()];
  const headers = await webhookHeaders([newS, oldS], "msg_abc_start", ts, body);
  assert.equal(headers["webhook-signature"].split(" ").length, 2);
  await verifyWebhook({ secret: oldS, headers, body, now });
  await verifyWebhook({ secret: newS, headers, body, now });
  await verifyWebhook({ secret: [generateWebhookSecret(), newS], headers, body, now });
});

Deno.test("verify: interop with the standardwebhooks reference library, both directions", async () => {
  const secret = generateWebhookSecret();
  // ours → theirs
  const ours = await webhookHeaders([secret], "msg_interop_end", Math.floor(Date.now() / 1000), body);
  const payload = new Webhook(secret).verify(body, ours);
  assert.deepEqual(payload, JSON.parse(body));
  // theirs → ours
  const at = new Date();
  const theirSig = new Webhook(secret).sign("msg_theirs_end", at, body);
  await verifyWebhook({
    secret,
    body,
    headers: {
      "webhook-id": "msg_theirs_end",
      "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
      "webhook-signature": theirSig,
    },
  });
  // theirs rejects a tampered body signed by us
  assert.throws(() => new Webhook(secret).verify(body + " ", ours));
});

Deno.test("verify: constant-time comparison", () => {
  assert.equal(constantTimeEqual(new Uint8Array([1, 2, 3]), new Uint8Array([1, 2, 3])), true);
  assert.equal(constantTimeEqual(new Uint8Array([1, 2, 3]), new Uint8Array([1, 2, 4])), false);
  assert.equal(constantTimeEqual(new Uint8Array([1, 2]), new Uint8Array([1, 2, 3])), false);
});
