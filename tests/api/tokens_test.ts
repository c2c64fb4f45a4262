import assert from "node:assert/strict";
import { sign, verify } from "hono/jwt";
import { TokenService } from "../../src/auth/tokens.ts";
import { OffsetClock } from "../../src/clock.ts";

const SECRET = "tok-secret-0123456789abcdef0123456789abcdef";

Deno.test("tokens: a minted token is the HS256 JWT hono would sign, and verifies with hono and the service", async () => {
  const clock = new OffsetClock();
  const tokens = new TokenService({ current: SECRET, previous: null }, clock);
  const { token, expiresAt } = await tokens.mint("session:AAAAAAAAAAAAAAAAAAAAAA", "proj_a", "client");
  const [, payload] = token.split(".");
  const claims = JSON.parse(atob(payload.replaceAll("-", "+").replaceAll("_", "/")));
  assert.equal(token, await sign(claims, SECRET, "HS256"), "same bytes as hono's sign");
  const viaHono = await verify(token, SECRET, { alg: "HS256", exp: false, nbf: false, iat: false });
  assert.equal(viaHono.sub, "session:AAAAAAAAAAAAAAAAAAAAAA");
  assert.equal(claims.exp * 1000, expiresAt);
  const checked = await tokens.verify(token, {
    purposes: ["client"],
    sessionId: "session:AAAAAAAAAAAAAAAAAAAAAA",
  });
  assert.ok(checked.ok);
  // a token signed with another secret, or tampered with, is refused
  const other = new TokenService({ current: SECRET.replace("tok", "oth"), previous: null }, clock);
  const foreign = (await other.mint("session:AAAAAAAAAAAAAAAAAAAAAA", "proj_a", "client")).token;
  assert.deepEqual(await tokens.verify(foreign, { purposes: ["client"] }), { ok: false, reason: "invalid" });
  const tampered = token.slice(0, -2) + (token.endsWith("A") ? "BB" : "AA");
  assert.deepEqual(await tokens.verify(tampered, { purposes: ["client"] }), { ok: false, reason: "invalid" });
});
