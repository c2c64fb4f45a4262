/**
 * Authentication of the API → worker calls and of worker registrations, with `SVC_INTERNAL_SECRET`.
 *
 * A call carries a short signature, never the secret: `X-Svc-Signature: v1=<base64url HMAC-SHA256>` over
 * `timestamp \n nonce \n method \n path \n sha256(body)`, with `X-Svc-Timestamp` (ms) and `X-Svc-Nonce`. The
 * worker accepts it within ±30 s of its clock, once (nonces are remembered for the window), so a captured
 * request can be neither altered nor replayed. A worker's registration (its URL in KV) is signed the same
 * way, so a process that can write KV but does not hold the secret cannot redirect the calls — which carry
 * provider credentials — to an address of its choosing.
 *
 * @module
 */
import { sha256 } from "@noble/hashes/sha2.js";
import type { Clock } from "../clock.ts";

/** How far a request's timestamp may be from the receiver's clock. */
export const MAX_SKEW_MS = 30_000;
const HEADER_TS = "x-svc-timestamp";
const HEADER_NONCE = "x-svc-nonce";
const HEADER_SIG = "x-svc-signature";

const enc = new TextEncoder();

function b64url(bytes: ArrayBuffer): string {
  let s = "";
  for (const b of new Uint8Array(bytes)) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromB64url(s: string): Uint8Array<ArrayBuffer> | null {
  if (!/^[A-Za-z0-9_-]+$/.test(s)) return null;
  const bin = atob(s.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((s.length + 3) % 4));
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

/**
 * SHA-256 of a body, hashed in JavaScript: a start body carries provider credentials, and WebCrypto copies
 * its input into a buffer nobody zeroes (the hash's own state is wiped after).
 */
function sha256Hex(body: Uint8Array<ArrayBuffer>): Promise<string> {
  return Promise.resolve(Array.from(sha256(body), (b) => b.toString(16).padStart(2, "0")).join(""));
}

/** Signs and verifies internal calls and worker registrations. */
export class InternalAuth {
  readonly #secret: string;
  #derived: Promise<{ request: CryptoKey; advert: CryptoKey }> | null = null;
  readonly #seen = new Map<string, number>();

  constructor(secret: string, readonly clock: Clock) {
    this.#secret = secret;
  }

  /**
   * The two HMAC keys, derived on first use rather than in the constructor: a process that never signs or
   * verifies (an API process answering only public routes) starts no WebCrypto work, and none is left
   * running when such a process is disposed right after it started.
   */
  get #keys(): Promise<{ request: CryptoKey; advert: CryptoKey }> {
    return this.#derived ??= (async () => {
      const base = await crypto.subtle.importKey("raw", enc.encode(this.#secret), "HKDF", false, [
        "deriveKey",
      ]);
      const derive = (info: string) =>
        crypto.subtle.deriveKey(
          { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(32), info: enc.encode(info) },
          base,
          { name: "HMAC", hash: "SHA-256", length: 256 },
          false,
          ["sign", "verify"],
        );
      return {
        request: await derive("svc-internal-request/v1"),
        advert: await derive("svc-worker-advert/v1"),
      };
    })();
  }

  /** The headers that sign a request of `method` to `path` (with its query) carrying `body`. */
  async sign(method: string, path: string, body: Uint8Array<ArrayBuffer>): Promise<Record<string, string>> {
    const ts = String(this.clock.now());
    const nonce = crypto.randomUUID();
    const mac = await crypto.subtle.sign(
      "HMAC",
      (await this.#keys).request,
      enc.encode(`${ts}\n${nonce}\n${method.toUpperCase()}\n${path}\n${await sha256Hex(body)}`),
    );
    return { [HEADER_TS]: ts, [HEADER_NONCE]: nonce, [HEADER_SIG]: `v1=${b64url(mac)}` };
  }

  /** True when `headers` sign exactly this request, recently, for the first time. */
  async verify(
    method: string,
    path: string,
    headers: Headers,
    body: Uint8Array<ArrayBuffer>,
  ): Promise<boolean> {
    const ts = headers.get(HEADER_TS) ?? "";
    const nonce = headers.get(HEADER_NONCE) ?? "";
    const sig = /^v1=([A-Za-z0-9_-]{43})$/.exec(headers.get(HEADER_SIG) ?? "")?.[1];
    if (!/^\d{1,15}$/.test(ts) || !/^[0-9a-f-]{36}$/.test(nonce) || !sig) return false;
    const now = this.clock.now();
    if (Math.abs(now - Number(ts)) > MAX_SKEW_MS) return false;
    const mac = fromB64url(sig);
    if (!mac) return false;
    const ok = await crypto.subtle.verify(
      "HMAC",
      (await this.#keys).request,
      mac,
      enc.encode(`${ts}\n${nonce}\n${method.toUpperCase()}\n${path}\n${await sha256Hex(body)}`),
    );
    if (!ok) return false;
    for (const [n, at] of this.#seen) if (now - at > 2 * MAX_SKEW_MS) this.#seen.delete(n);
    if (this.#seen.has(nonce)) return false;
    this.#seen.set(nonce, now);
    return true;
  }

  /** The signature of a worker's registration (its id and addresses). */
  async signAdvert(instanceId: string, url: string, publicUrl: string): Promise<string> {
    const mac = await crypto.subtle.sign(
      "HMAC",
      (await this.#keys).advert,
      enc.encode(`${instanceId}\n${url}\n${publicUrl}`),
    );
    return b64url(mac);
  }

  /** True when `signature` was made by a holder of the secret for exactly these addresses. */
  async verifyAdvert(
    instanceId: string,
    url: string,
    publicUrl: string,
    signature: string,
  ): Promise<boolean> {
    const mac = fromB64url(signature);
    if (!mac) return false;
    return await crypto.subtle.verify(
      "HMAC",
      (await this.#keys).advert,
      mac,
      enc.encode(`${instanceId}\n${url}\n${publicUrl}`),
    );
  }
}
