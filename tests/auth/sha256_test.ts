import assert from "node:assert/strict";
import { createHash, createHmac } from "node:crypto";
import { HmacSha256, residueForTests, sha256Hex } from "../../src/auth/sha256.ts";
import { generateApiKey, hashApiKey } from "../../src/auth/api_key_format.ts";

const nodeSha = (s: string) => createHash("sha256").update(s, "utf8").digest("hex");
const nodeHmac = (k: string | Uint8Array, s: string) =>
  createHmac("sha256", k).update(s, "utf8").digest("base64url");

/** Texts around every boundary of the reused state: empty, one block, padding edges, multi-byte, past the scratch buffer. */
function texts(): string[] {
  const out = ["", "abc", "é", "日本語のテキスト", "emoji 😀 and a lone surrogate \ud800 here", "\u0000nul"];
  for (const n of [55, 56, 63, 64, 65, 119, 120, 127, 128, 2047, 2048, 2049, 5000]) out.push("x".repeat(n));
  // multi-byte characters straddling the end of the 2,048-byte scratch buffer
  out.push("a".repeat(2046) + "€€", "€".repeat(700));
  for (let i = 0; i < 200; i++) {
    const len = Math.floor(Math.random() * 300);
    let s = "";
    for (let j = 0; j < len; j++) {
      s += String.fromCodePoint(Math.floor(Math.random() * (j % 7 ? 0x80 : 0x2000)));
    }
    out.push(s);
  }
  return out;
}

Deno.test("sha256Hex: equals node:crypto on the FIPS 180-2 vectors and on edge and random texts", () => {
  assert.equal(sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  assert.equal(
    sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
  );
  assert.equal(sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  for (const t of texts()) assert.equal(sha256Hex(t), nodeSha(t), JSON.stringify(t.slice(0, 40)));
});

Deno.test("sha256Hex: calls do not leak state into each other (same text twice, interleaved texts)", () => {
  const all = texts();
  const first = all.map(sha256Hex);
  const reversed = [...all].reverse().map(sha256Hex).reverse();
  assert.deepEqual(reversed, first);
  for (const t of all) assert.equal(sha256Hex(t), sha256Hex(t));
});

Deno.test("hashApiKey: the stored form of real keys is their SHA-256 hex", () => {
  for (let i = 0; i < 100; i++) {
    const key = generateApiKey();
    assert.equal(hashApiKey(key), nodeSha(key));
  }
});

Deno.test("HmacSha256: equals node:crypto for string and byte keys (short, block-sized, longer than a block)", () => {
  const keys: (string | Uint8Array)[] = [
    "k",
    "tok-secret-0123456789abcdef0123456789abcdef",
    "x".repeat(64),
    "y".repeat(65),
    "€".repeat(40),
    crypto.getRandomValues(new Uint8Array(32)),
    crypto.getRandomValues(new Uint8Array(100)),
  ];
  const all = texts();
  for (const k of keys) {
    const mac = new HmacSha256(k);
    for (const t of all) assert.equal(mac.base64url(t), nodeHmac(k, t));
  }
});

Deno.test("HmacSha256: two keys used in turn keep their own state, and hashing between MACs changes nothing", () => {
  const a = new HmacSha256("key-a");
  const b = new HmacSha256("key-b");
  for (const t of texts().slice(0, 40)) {
    const ma = a.base64url(t);
    sha256Hex(t + "!");
    const mb = b.base64url(t);
    assert.equal(ma, nodeHmac("key-a", t));
    assert.equal(mb, nodeHmac("key-b", t));
    assert.equal(a.base64url(t), ma);
  }
});

Deno.test("sha256Hex and HmacSha256: no plaintext is left in reused memory after a message", () => {
  const key = generateApiKey();
  assert.equal(sha256Hex(key), nodeSha(key));
  assert.equal(residueForTests(), 0, "after an API-key hash");
  const mac = new HmacSha256("tok-secret");
  assert.equal(mac.base64url("header.payload"), nodeHmac("tok-secret", "header.payload"));
  assert.equal(residueForTests(), 0, "after a signature");
  assert.equal(sha256Hex(key), nodeSha(key), "the wiped instance still hashes right");
});
