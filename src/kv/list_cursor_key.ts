/**
 * The HMAC key that makes listing cursors tamper-evident: 32 random bytes, one per deployment, created in
 * KV on first use (compare-and-set, so every process of a deployment signs with the same key, whatever its
 * role or configuration) and kept in memory per KV handle afterwards (`cursorKeyOf` of `handle_state.ts`). It signs cursors only; it guards no
 * data (a cursor only tells where a page of the caller's own project starts).
 *
 * @module
 */
import { kvOp } from "./guard.ts";
import { listCursorKeyKey } from "./keys.ts";

/** The stored key. */
export interface CursorKeyRecord {
  /** base64 of 32 random bytes. */
  key: string;
  created_at: number;
}

function fromBase64(s: string): Uint8Array<ArrayBuffer> {
  return Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
}

/** Reads the deployment's cursor key from KV, creating it when there is none (compare-and-set). */
export async function loadCursorKey(kv: Deno.Kv, now: number): Promise<CryptoKey> {
  const raw = await kvOp(async () => {
    for (;;) {
      const entry = await kv.get<CursorKeyRecord>(listCursorKeyKey);
      if (entry.value) return fromBase64(entry.value.key);
      const bytes = crypto.getRandomValues(new Uint8Array(32));
      const rec: CursorKeyRecord = { key: btoa(String.fromCharCode(...bytes)), created_at: now };
      const res = await kv.atomic().check(entry).set(listCursorKeyKey, rec).commit();
      if (res.ok) return bytes;
    }
  });
  try {
    return await crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, [
      "sign",
      "verify",
    ]);
  } finally {
    raw.fill(0);
  }
}
