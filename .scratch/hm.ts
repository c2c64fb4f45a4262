import { createHash, createHmac, createSecretKey } from "node:crypto";
import { Buffer } from "node:buffer";
const secret = "s".repeat(40);
const msg = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + Buffer.from(JSON.stringify({ sub: "session:AAAAAAAAAAAAAAAAAAAAAA", pid: "proj_bench", pur: "client", iss: "svc", iat: 1, exp: 2, jti: crypto.randomUUID() })).toString("base64url");
const ko = createSecretKey(Buffer.from(secret));
const kb = Buffer.from(secret);
const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
const block = Buffer.alloc(64); kb.copy(block);
const ipad = Buffer.from(block.map((b) => b ^ 0x36)), opad = Buffer.from(block.map((b) => b ^ 0x5c));
const ih = createHash("sha256").update(ipad), oh = createHash("sha256").update(opad);
const enc = new TextEncoder();
function b64url(u: Uint8Array) { let s = ""; for (const b of u) s += String.fromCharCode(b); return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, ""); }
async function t(name: string, f: () => unknown) { for (let i = 0; i < 3000; i++) await f(); const n = 30000; const t0 = performance.now(); for (let i = 0; i < n; i++) await f(); console.log(name, ((performance.now() - t0) / n * 1000).toFixed(2), "µs"); }
const ref = createHmac("sha256", ko).update(msg).digest("base64url");
console.log(ref === createHmac("sha256", kb).update(msg).digest("base64url"), ref === oh.copy().update(ih.copy().update(msg).digest()).digest("base64url"), ref === b64url(new Uint8Array(await crypto.subtle.sign("HMAC", key, enc.encode(msg)))));
await t("hmac keyobject", () => createHmac("sha256", ko).update(msg).digest("base64url"));
await t("hmac buffer", () => createHmac("sha256", kb).update(msg).digest("base64url"));
await t("hash copy", () => oh.copy().update(ih.copy().update(msg).digest()).digest("base64url"));
await t("subtle", async () => b64url(new Uint8Array(await crypto.subtle.sign("HMAC", key, enc.encode(msg)))));
await t("b64 payload Buffer", () => Buffer.from(msg, "utf8").toString("base64url"));
await t("b64 payload btoa", () => btoa(msg).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, ""));
