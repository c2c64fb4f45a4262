import assert from "node:assert/strict";
import { OffsetClock } from "../../src/clock.ts";
import { InternalAuth, MAX_SKEW_MS } from "../../src/fleet/internal_auth.ts";

const SECRET = "internal-secret-0123456789abcdef0123456789";

/** An InternalAuth; its keys are derived on first use, so one that never signs leaves nothing running. */
function auth(secret: string, clock: OffsetClock): InternalAuth {
  return new InternalAuth(secret, clock);
}
const body = (s: string) => new TextEncoder().encode(s);

Deno.test("internal auth: a signed request verifies once; the secret never travels", async () => {
  const clock = new OffsetClock();
  const a = auth(SECRET, clock);
  const b = auth(SECRET, clock);
  const headers = new Headers(await a.sign("POST", "/internal/v1/sessions/end", body('{"x":1}')));
  for (const v of headers.values()) assert.ok(!v.includes(SECRET));
  assert.equal(await b.verify("POST", "/internal/v1/sessions/end", headers, body('{"x":1}')), true);
  assert.equal(
    await b.verify("POST", "/internal/v1/sessions/end", headers, body('{"x":1}')),
    false,
    "no replay",
  );
});

Deno.test("internal auth: another body, path, method, secret, a stale or future timestamp all fail", async () => {
  const clock = new OffsetClock();
  const a = auth(SECRET, clock);
  const sign = async () => new Headers(await a.sign("POST", "/p", body("b")));
  const verifier = () => auth(SECRET, clock);
  assert.equal(await verifier().verify("POST", "/p", await sign(), body("B")), false);
  assert.equal(await verifier().verify("POST", "/q", await sign(), body("b")), false);
  assert.equal(await verifier().verify("GET", "/p", await sign(), body("b")), false);
  assert.equal(
    await auth(SECRET + "x", clock).verify("POST", "/p", await sign(), body("b")),
    false,
  );
  const old = await sign();
  clock.advance(MAX_SKEW_MS + 1);
  assert.equal(await verifier().verify("POST", "/p", old, body("b")), false, "too old");
  const future = new Headers(await auth(SECRET, new OffsetClock()).sign("POST", "/p", body("b")));
  // (well past the skew: real time passes between signing and verifying, more of it on a busy machine)
  const behind = new OffsetClock();
  behind.advance(-(MAX_SKEW_MS + 10_000));
  assert.equal(
    await auth(SECRET, behind).verify("POST", "/p", future, body("b")),
    false,
    "future",
  );
  const h = await sign();
  h.set("x-svc-signature", "v1=" + "A".repeat(43));
  assert.equal(await verifier().verify("POST", "/p", h, body("b")), false, "forged");
  assert.equal(await verifier().verify("POST", "/p", new Headers(), body("b")), false, "unsigned");
});

Deno.test("internal auth: a worker registration is signed for exactly its id and addresses", async () => {
  const a = auth(SECRET, new OffsetClock());
  const sig = await a.signAdvert("inst_1", "https://w1:8443", "https://media.example");
  assert.equal(await a.verifyAdvert("inst_1", "https://w1:8443", "https://media.example", sig), true);
  assert.equal(await a.verifyAdvert("inst_1", "https://evil:8443", "https://media.example", sig), false);
  assert.equal(await a.verifyAdvert("inst_2", "https://w1:8443", "https://media.example", sig), false);
  const other = auth("another-secret-0123456789abcdef01234567", new OffsetClock());
  assert.equal(await other.verifyAdvert("inst_1", "https://w1:8443", "https://media.example", sig), false);
});

Deno.test("internal auth: constructing one starts no WebCrypto work (none left running if it is never used)", async () => {
  // A process that never makes an internal call (an API process disposed right after a public request)
  // must not leave key derivation pending: the op sanitizer fails this test if construction starts it. The
  // microtask turns let an eager derivation reach its WebCrypto calls; no event-loop turn lets them finish.
  new InternalAuth(SECRET, new OffsetClock());
  for (let i = 0; i < 10; i++) await Promise.resolve();
});
