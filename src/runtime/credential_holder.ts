/**
 * The one place a session's provider credentials live.
 *
 * The credentials are held as UTF-8 bytes of their JSON form, in one `Uint8Array` owned by the holder.
 * `zero()` overwrites every byte and is called when the session ends (any way it ends). The holder
 * redacts itself when logged, inspected, stringified or structured-cloned, so passing it to a logger, a
 * JSON body or KV by mistake cannot leak the secret.
 *
 * @module
 */

const REDACTED = "[CredentialHolder: redacted]";

/**
 * Holds one session's provider credentials.
 *
 * @example Usage
 * ```ts
 * import { CredentialHolder } from "./credential_holder.ts";
 * const holder = CredentialHolder.fromObject({ client_secret: "ek_example" });
 * holder.use((c) => c.client_secret); // "ek_example"
 * holder.zero();
 * holder.isZeroed(); // true
 * ```
 */
export class CredentialHolder {
  #bytes: Uint8Array;
  #zeroed = false;

  private constructor(bytes: Uint8Array) {
    this.#bytes = bytes;
  }

  /** Encodes `value` (the provider's config object) into a new holder. */
  static fromObject(value: Record<string, unknown>): CredentialHolder {
    return new CredentialHolder(new TextEncoder().encode(JSON.stringify(value)));
  }

  /**
   * A holder of a copy of `bytes` (the UTF-8 JSON of the provider's config object). The caller zeroes its
   * own buffer afterwards (`bytes.fill(0)`): the holder's copy is then the only one.
   */
  static fromBytes(bytes: Uint8Array): CredentialHolder {
    return new CredentialHolder(bytes.slice());
  }

  /**
   * Lends the held bytes to `fn` (to hand them to a remote worker). The view must not outlive `fn`'s
   * promise; throws once the holder is zeroed.
   */
  async lend<T>(fn: (bytes: Uint8Array) => Promise<T>): Promise<T> {
    if (this.#zeroed) throw new Error("credentials were already released");
    return await fn(this.#bytes);
  }

  /**
   * Decodes the credentials for the duration of `fn` only. Callers must not keep the object.
   * Throws once the holder is zeroed.
   */
  use<T>(fn: (credentials: Record<string, unknown>) => T): T {
    if (this.#zeroed) throw new Error("credentials were already released");
    return fn(JSON.parse(new TextDecoder().decode(this.#bytes)));
  }

  /** Overwrites every byte with zero. Idempotent. */
  zero(): void {
    this.#bytes.fill(0);
    this.#zeroed = true;
  }

  /** True after {@link zero}. */
  isZeroed(): boolean {
    return this.#zeroed;
  }

  /** For tests: a copy of the held bytes, to prove they are all zero after the session. */
  snapshotBytes(): Uint8Array {
    return this.#bytes.slice();
  }

  toString(): string {
    return REDACTED;
  }
  toJSON(): string {
    return REDACTED;
  }
  [Symbol.for("Deno.customInspect")](): string {
    return REDACTED;
  }
  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return REDACTED;
  }
}
