/**
 * Short-lived HMAC-signed media-plane tokens (HS256 JWTs).
 *
 * Two purposes: `client` (the `client_token` handed to the browser) and `media` (the `session_token` of
 * `stream_metadata`). Both live 5 minutes, are bound to one session and one project, and are verified
 * against the current secret and, during a rotation, the previous one. Expiry is checked against the
 * injected clock (hono's own `exp` check reads the wall clock, so it is switched off and done here).
 *
 * Minting signs synchronously with an HMAC-SHA256 instance keyed once per secret (`sha256.ts`; the
 * client-token route mints two tokens per request: hono's `sign` costs ~35 µs of CPU a token here, as a
 * WebCrypto round trip plus JS base64, against a few µs; node:crypto's `createHmac` would leave a native
 * object per signature that only a full collection frees). Verification uses hono's `verify` with the
 * secret imported once as a `CryptoKey` (given a string, hono imports the key again for every call).
 * Tests check that both agree (a minted token verifies with hono and equals hono's own signature).
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { verify } from "hono/jwt";
import type { Clock } from "../clock.ts";
import { HmacSha256 } from "./sha256.ts";

/** Token lifetime, ms (5 minutes, from the interface specification). */
export const TOKEN_TTL_MS = 5 * 60_000;
/** Token purposes. */
export type TokenPurpose = "client" | "media";

/** Claims of a verified token. */
export interface TokenClaims {
  /** Session id. */
  sub: string;
  /** Project id. */
  pid: string;
  /** Purpose. */
  pur: TokenPurpose;
  /** Issued at, seconds. */
  iat: number;
  /** Expires at, seconds. */
  exp: number;
  /** Unique token id. */
  jti: string;
}

/** Why a token was refused. */
export type TokenRejection = "invalid" | "expired" | "wrong_purpose" | "wrong_session";

const ISSUER = "svc";
/** base64url of the JOSE header `{"alg":"HS256","typ":"JWT"}` (what hono's `sign` writes). */
const JWT_HEADER = Buffer.from(JSON.stringify({ alg: "HS256", typ: "JWT" })).toString("base64url");

/** Mints and verifies tokens with the configured secret(s). */
export class TokenService {
  readonly #current: string | null;
  readonly #previous: string | null;
  /** The current secret as a signing key. */
  readonly #signingKey: HmacSha256 | null;
  /** The secrets imported as WebCrypto HMAC keys for verification, on first use. */
  #currentKey: Promise<CryptoKey> | null = null;
  #previousKey: Promise<CryptoKey> | null = null;

  constructor(
    secrets: { current: string; previous: string | null } | null,
    readonly clock: Clock,
  ) {
    this.#current = secrets?.current ?? null;
    this.#previous = secrets?.previous ?? null;
    this.#signingKey = this.#current === null ? null : new HmacSha256(this.#current);
  }

  /** A fresh random secret for the embedded default (lives as long as the process). */
  static generateEphemeralSecret(): string {
    const bytes = crypto.getRandomValues(new Uint8Array(48));
    return btoa(String.fromCharCode(...bytes)).replace(
      /[+/=]/g,
      (c) => ({ "+": "-", "/": "_", "=": "" })[c]!,
    );
  }

  /**
   * Derives a 256-bit HMAC key for `label` from the current secret (HKDF-SHA256), e.g. for idempotency
   * fingerprints. Null when no secret is configured.
   */
  async deriveKey(label: string): Promise<CryptoKey | null> {
    if (this.#current === null) return null;
    const base = await crypto.subtle.importKey(
      "raw",
      new TextEncoder().encode(this.#current),
      "HKDF",
      false,
      [
        "deriveKey",
      ],
    );
    return await crypto.subtle.deriveKey(
      { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: new TextEncoder().encode(label) },
      base,
      { name: "HMAC", hash: "SHA-256", length: 256 },
      false,
      ["sign"],
    );
  }

  #key(which: "current" | "previous"): Promise<CryptoKey> | null {
    const secret = which === "current" ? this.#current : this.#previous;
    if (secret === null) return null;
    if (which === "current") return this.#currentKey ??= importHmacKey(secret);
    return this.#previousKey ??= importHmacKey(secret);
  }

  /** Whether a signing secret is configured. */
  get available(): boolean {
    return this.#current !== null;
  }

  /** Mints a token; `expiresAt` (ms) equals the token's `exp` claim × 1000. */
  mint(
    sessionId: string,
    projectId: string,
    purpose: TokenPurpose,
  ): Promise<{ token: string; expiresAt: number }> {
    if (this.#signingKey === null) return Promise.reject(new Error("no token signing secret"));
    const iat = Math.floor(this.clock.now() / 1000);
    const exp = iat + TOKEN_TTL_MS / 1000;
    const claims: TokenClaims & { iss: string } = {
      iss: ISSUER,
      sub: sessionId,
      pid: projectId,
      pur: purpose,
      iat,
      exp,
      jti: crypto.randomUUID(),
    };
    const signed = `${JWT_HEADER}.${Buffer.from(JSON.stringify(claims), "utf8").toString("base64url")}`;
    const signature = this.#signingKey.base64url(signed);
    return Promise.resolve({ token: `${signed}.${signature}`, expiresAt: exp * 1000 });
  }

  /**
   * Verifies a token for `purposes` (and, if given, one session). Signature, algorithm, issuer, expiry
   * and purpose are all checked.
   */
  async verify(
    token: string,
    expect: { purposes: readonly TokenPurpose[]; sessionId?: string },
  ): Promise<{ ok: true; claims: TokenClaims } | { ok: false; reason: TokenRejection }> {
    if (this.#current === null) return { ok: false, reason: "invalid" };
    let claims: (TokenClaims & { iss?: string }) | null = null;
    for (const which of ["current", "previous"] as const) {
      const key = this.#key(which);
      if (key === null) continue;
      try {
        claims = await verify(token, await key, {
          alg: "HS256",
          exp: false,
          nbf: false,
          iat: false,
        }) as unknown as
          & TokenClaims
          & { iss?: string };
        break;
      } catch {
        // try the previous secret, then give up
      }
    }
    if (
      !claims || claims.iss !== ISSUER || typeof claims.exp !== "number" || typeof claims.sub !== "string" ||
      typeof claims.pid !== "string"
    ) {
      return { ok: false, reason: "invalid" };
    }
    if (this.clock.now() >= claims.exp * 1000) return { ok: false, reason: "expired" };
    if (!expect.purposes.includes(claims.pur)) return { ok: false, reason: "wrong_purpose" };
    if (expect.sessionId !== undefined && claims.sub !== expect.sessionId) {
      return { ok: false, reason: "wrong_session" };
    }
    return { ok: true, claims };
  }
}

function importHmacKey(secret: string): Promise<CryptoKey> {
  return crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign", "verify"],
  );
}
