/**
 * The one place a session's provider credentials live, as bytes — they never become JavaScript strings.
 *
 * The holder owns one `Uint8Array`: an encoding of the session's provider config in which every
 * credential (see `CREDENTIAL_FIELDS` of `src/providers/definitions/credential_reader.ts`) is a byte field, and the
 * other fields (an agent id, a sample rate, header names) are text or numbers. A bridge borrows views of
 * the credential bytes ({@link CredentialHolder.secret}, {@link CredentialHolder.headers}) to write them
 * into the engine's socket; the API hands the whole encoding to a worker as it is
 * ({@link CredentialHolder.lend}, {@link CredentialHolder.fromBytes}). `zero()` overwrites every byte; it
 * is called when the engine's connection is open or its start failed, when the session ends, and when a
 * create is refused. The holder redacts itself when logged, inspected, stringified or structured-cloned.
 *
 * Encoding: the byte `0xC1`, then entries `kind (u8) · name length (u16) · name (UTF-8) · value length
 * (u32) · value` (big-endian lengths); kinds: 1 credential bytes, 2 text (UTF-8), 3 number (float64),
 * 4 an `auth_headers` entry (its name, its value's bytes).
 *
 * @module
 */
import { sha256 } from "@noble/hashes/sha2.js";

const REDACTED = "[CredentialHolder: redacted]";
const MAGIC = 0xc1;
const enum Kind {
  Secret = 1,
  Text = 2,
  Number = 3,
  Header = 4,
}

interface Entry {
  kind: Kind;
  name: string;
  start: number;
  end: number;
}

/** Fields names whose values are credentials (for {@link CredentialHolder.fromObject}). */
const SECRET_NAMES = new Set(["client_secret", "access_token", "api_key", "signed_url", "url"]);

/** What a holder is built from: credential bytes, plain fields, and the engine's headers. */
export interface HolderFields {
  /** Credential fields, UTF-8 (the holder copies them; the caller zeroes its own). */
  secrets?: Iterable<[string, Uint8Array]>;
  /** Plain fields (not credentials). */
  plain?: Record<string, string | number | undefined>;
  /** `auth_headers`: names (not credentials) and values (credentials, UTF-8). */
  headers?: Iterable<[string, Uint8Array]>;
}

/**
 * Holds one session's provider credentials.
 *
 * @example Usage
 * ```ts
 * import { CredentialHolder } from "./credential_holder.ts";
 * const holder = CredentialHolder.build({ secrets: [["client_secret", new Uint8Array([0x65, 0x6b])]] });
 * holder.secret("client_secret"); // the bytes, until zeroed
 * holder.zero();
 * holder.isZeroed(); // true
 * ```
 */
export class CredentialHolder {
  #bytes: Uint8Array<ArrayBuffer>;
  #entries: Entry[];
  #zeroed = false;

  private constructor(bytes: Uint8Array<ArrayBuffer>, entries: Entry[]) {
    this.#bytes = bytes;
    this.#entries = entries;
  }

  /** A holder of `fields` (copied into the holder's own buffer). */
  static build(fields: HolderFields): CredentialHolder {
    const enc = new TextEncoder();
    const parts: [Kind, Uint8Array, Uint8Array][] = [];
    for (const [name, value] of fields.secrets ?? []) parts.push([Kind.Secret, enc.encode(name), value]);
    for (const [name, value] of Object.entries(fields.plain ?? {})) {
      if (value === undefined) continue;
      if (typeof value === "number") {
        const v = new Uint8Array(8);
        new DataView(v.buffer).setFloat64(0, value);
        parts.push([Kind.Number, enc.encode(name), v]);
      } else parts.push([Kind.Text, enc.encode(name), enc.encode(value)]);
    }
    for (const [name, value] of fields.headers ?? []) parts.push([Kind.Header, enc.encode(name), value]);
    const size = 1 + parts.reduce((n, [, name, value]) => n + 7 + name.length + value.length, 0);
    const out = new Uint8Array(size);
    const view = new DataView(out.buffer);
    out[0] = MAGIC;
    let o = 1;
    for (const [kind, name, value] of parts) {
      out[o] = kind;
      view.setUint16(o + 1, name.length);
      out.set(name, o + 3);
      o += 3 + name.length;
      view.setUint32(o, value.length);
      out.set(value, o + 4);
      o += 4 + value.length;
    }
    return new CredentialHolder(out, CredentialHolder.#index(out)!);
  }

  /**
   * A holder of a copy of `bytes` (a holder's encoding, as {@link lend} gave it); null when they are not
   * one. The caller zeroes its own buffer afterwards: the holder's copy is then the only one.
   */
  static fromBytes(bytes: Uint8Array): CredentialHolder | null {
    const copy = bytes.slice();
    const entries = CredentialHolder.#index(copy);
    if (!entries) {
      copy.fill(0);
      return null;
    }
    return new CredentialHolder(copy, entries);
  }

  /**
   * For tests and tools whose credentials are strings already: a holder of a provider config object
   * (credential fields as bytes, `auth_headers` as headers, other strings as text, numbers as numbers).
   */
  static fromObject(config: Record<string, unknown>): CredentialHolder {
    const enc = new TextEncoder();
    const secrets: [string, Uint8Array][] = [];
    const plain: Record<string, string | number> = {};
    let headers: [string, Uint8Array][] = [];
    for (const [name, value] of Object.entries(config)) {
      if (name === "auth_headers" && value && typeof value === "object") {
        headers = Object.entries(value as Record<string, string>).map(([n, v]) => [n, enc.encode(String(v))]);
      } else if (SECRET_NAMES.has(name) && typeof value === "string") secrets.push([name, enc.encode(value)]);
      else if (typeof value === "string" || typeof value === "number") plain[name] = value;
    }
    return CredentialHolder.build({ secrets, plain, headers });
  }

  static #index(bytes: Uint8Array): Entry[] | null {
    if (bytes.length < 1 || bytes[0] !== MAGIC) return null;
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const dec = new TextDecoder("utf-8", { fatal: true });
    const entries: Entry[] = [];
    let o = 1;
    try {
      while (o < bytes.length) {
        const kind = bytes[o] as Kind;
        if (kind < Kind.Secret || kind > Kind.Header || o + 3 > bytes.length) return null;
        const nameLen = view.getUint16(o + 1);
        if (o + 3 + nameLen + 4 > bytes.length) return null;
        // Names are field and header names, not credentials.
        const name = dec.decode(bytes.subarray(o + 3, o + 3 + nameLen));
        o += 3 + nameLen;
        const len = view.getUint32(o);
        if (o + 4 + len > bytes.length || (kind === Kind.Number && len !== 8)) return null;
        entries.push({ kind, name, start: o + 4, end: o + 4 + len });
        o += 4 + len;
      }
    } catch {
      return null;
    }
    return entries;
  }

  #check(): void {
    if (this.#zeroed) throw new Error("credentials were already released");
  }

  #last(kind: Kind, name: string): Entry | undefined {
    return this.#entries.findLast((e) => e.kind === kind && e.name === name);
  }

  /**
   * A view of the credential field `name`'s bytes (UTF-8), or null when there is none. The view is the
   * holder's own memory: write it where it goes and keep no copy; it reads zeros once the holder is zeroed.
   */
  secret(name: string): Uint8Array | null {
    this.#check();
    const e = this.#last(Kind.Secret, name);
    return e ? this.#bytes.subarray(e.start, e.end) : null;
  }

  /** A plain text field (not a credential), or null. */
  text(name: string): string | null {
    this.#check();
    const e = this.#last(Kind.Text, name);
    return e ? new TextDecoder().decode(this.#bytes.subarray(e.start, e.end)) : null;
  }

  /** A number field, or null. */
  number(name: string): number | null {
    this.#check();
    const e = this.#last(Kind.Number, name);
    return e ? new DataView(this.#bytes.buffer, e.start, 8).getFloat64(0) : null;
  }

  /** The `auth_headers` entries in order: names, and views of their values' bytes (as {@link secret}). */
  headers(): { name: string; value: Uint8Array }[] {
    this.#check();
    return this.#entries.filter((e) => e.kind === Kind.Header).map((e) => ({
      name: e.name,
      value: this.#bytes.subarray(e.start, e.end),
    }));
  }

  /**
   * SHA-256 of what the holder holds, independent of the order of its fields and headers (for the
   * idempotency fingerprint: the same credentials give the same digest). Hashed in JavaScript (WebCrypto
   * copies its input into a buffer nobody zeroes); the hash's own state is wiped after.
   */
  digest(): Uint8Array {
    this.#check();
    const h = sha256.create();
    const head = new Uint8Array(5);
    const view = new DataView(head.buffer);
    const sorted = [...this.#entries].sort((a, b) =>
      a.kind - b.kind || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)
    );
    for (const e of sorted) {
      const name = new TextEncoder().encode(e.name);
      head[0] = e.kind;
      view.setUint32(1, name.length);
      h.update(head);
      h.update(name);
      view.setUint32(1, e.end - e.start);
      h.update(head.subarray(1));
      h.update(this.#bytes.subarray(e.start, e.end));
    }
    return h.digest();
  }

  /**
   * Lends the whole encoding to `fn` (to hand it to a remote worker). The view must not outlive `fn`'s
   * promise; throws once the holder is zeroed.
   */
  async lend<T>(fn: (bytes: Uint8Array) => Promise<T>): Promise<T> {
    this.#check();
    return await fn(this.#bytes);
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
