/**
 * Local TLS material for the reference engine: a private certificate authority (ECDSA P-256) and a server
 * certificate it signs for `localhost`, `127.0.0.1` and `::1`.
 *
 * The bridge only connects to `wss://` engines, so the reference engine needs a certificate the bridge can be
 * told to trust (`SVC_ENGINE_CA_FILE`). Rustls refuses a CA certificate used directly as a server certificate,
 * hence the two-level chain. {@link loadOrCreateEngineTls} persists everything in a directory and reuses it
 * while it is valid, so the CA only has to be trusted once.
 *
 * @module
 */

import type * as X509 from "@peculiar/x509";
import { installReflectMetadata } from "./reflect_metadata.ts";

/** Names the server certificate is valid for (subject alternative names). */
export const ENGINE_TLS_HOSTNAMES: readonly string[] = ["localhost", "127.0.0.1", "::1"];

const EC_ALGORITHM = { name: "ECDSA", namedCurve: "P-256" } as const;
const SIGNING_ALGORITHM = { name: "ECDSA", hash: "SHA-256" } as const;
const DAY_MS = 24 * 60 * 60 * 1000;

/** A certificate and its private key, both PEM encoded (the key as PKCS#8 `PRIVATE KEY`). */
export interface PemKeyPair {
  /** Certificate, `-----BEGIN CERTIFICATE-----`. */
  certPem: string;
  /** Private key, PKCS#8, `-----BEGIN PRIVATE KEY-----`. */
  keyPem: string;
}

/** A freshly generated CA and server certificate. `certPem`/`keyPem` fit `Deno.serve({ cert, key })`. */
export interface EngineTlsMaterial extends PemKeyPair {
  /** The CA certificate clients must trust. */
  caPem: string;
  /** The CA private key (needed to renew the server certificate without changing the CA). */
  caKeyPem: string;
  /** Expiry of the server certificate. */
  notAfter: Date;
  /** Expiry of the CA certificate. */
  caNotAfter: Date;
}

/** Options for certificate generation. */
export interface EngineTlsOptions {
  /** Reference time (default: now). */
  now?: Date;
  /** CA lifetime in days (default 3650). */
  caValidityDays?: number;
  /** Server certificate lifetime in days (default 365). */
  serverValidityDays?: number;
}

/** TLS material persisted in a directory by {@link loadOrCreateEngineTls}. */
export interface EngineTlsFiles extends PemKeyPair {
  /** The CA certificate clients must trust (contents of {@link caFile}). */
  caPem: string;
  /** Absolute or caller-relative path of `ca.pem`. */
  caFile: string;
  /** Path of `server.pem`. */
  certFile: string;
  /** Path of `server.key` (mode 0600). */
  keyFile: string;
  /** Path of `ca.key` (mode 0600). */
  caKeyFile: string;
  /** Expiry of the server certificate. */
  notAfter: Date;
  /** What had to be (re)generated: nothing, only the server certificate, or everything. */
  generated: "none" | "server" | "all";
}

let x509Module: Promise<typeof X509> | undefined;

/** Loads `@peculiar/x509` lazily, after installing the `Reflect` metadata functions it requires. */
function loadX509(): Promise<typeof X509> {
  if (!x509Module) {
    installReflectMetadata();
    x509Module = import("@peculiar/x509");
  }
  return x509Module;
}

function randomSerial(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[0] &= 0x7f; // positive INTEGER
  bytes[0] |= 0x01; // no leading zero octet
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function toPem(label: string, der: ArrayBuffer): string {
  const bytes = new Uint8Array(der);
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  const b64 = btoa(binary);
  const lines = b64.match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----\n`;
}

function fromPem(label: string, pem: string): Uint8Array<ArrayBuffer> {
  const match = pem.match(new RegExp(`-----BEGIN ${label}-----([\\s\\S]*?)-----END ${label}-----`));
  if (!match) throw new Error(`no PEM block "${label}" found`);
  const binary = atob(match[1].replace(/\s+/g, ""));
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

async function exportKeyPem(key: CryptoKey): Promise<string> {
  return toPem("PRIVATE KEY", await crypto.subtle.exportKey("pkcs8", key));
}

/** Imports a PKCS#8 PEM ECDSA P-256 private key for signing. */
async function importSigningKey(keyPem: string): Promise<CryptoKey> {
  return await crypto.subtle.importKey("pkcs8", fromPem("PRIVATE KEY", keyPem), EC_ALGORITHM, true, ["sign"]);
}

function generateKeyPair(): Promise<CryptoKeyPair> {
  return crypto.subtle.generateKey(EC_ALGORITHM, true, ["sign", "verify"]) as Promise<CryptoKeyPair>;
}

/**
 * Generates a self-signed local CA (ECDSA P-256, `CA:true, pathlen:0`, keyCertSign + cRLSign).
 *
 * @param options lifetime and reference time
 * @returns the CA certificate and PKCS#8 key in PEM, and its expiry
 */
export async function generateEngineCa(
  options: EngineTlsOptions = {},
): Promise<PemKeyPair & { notAfter: Date }> {
  const x509 = await loadX509();
  const now = options.now ?? new Date();
  const notBefore = new Date(now.getTime() - 60 * 60 * 1000);
  const notAfter = new Date(now.getTime() + (options.caValidityDays ?? 3650) * DAY_MS);
  const keys = await generateKeyPair();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: "CN=Avatar Reference Engine Local CA, O=avatar-session-service",
    notBefore,
    notAfter,
    signingAlgorithm: SIGNING_ALGORITHM,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { certPem: cert.toString("pem") + "\n", keyPem: await exportKeyPem(keys.privateKey), notAfter };
}

/**
 * Issues a server certificate signed by `ca` for {@link ENGINE_TLS_HOSTNAMES} (`CA:false`, digitalSignature,
 * EKU serverAuth), with a new P-256 key.
 *
 * @param ca the signing CA (certificate and PKCS#8 key PEM)
 * @param options lifetime and reference time
 * @returns the server certificate and PKCS#8 key in PEM, and its expiry
 */
export async function issueServerCertificate(
  ca: PemKeyPair,
  options: EngineTlsOptions = {},
): Promise<PemKeyPair & { notAfter: Date }> {
  const x509 = await loadX509();
  const now = options.now ?? new Date();
  const caCert = new x509.X509Certificate(ca.certPem);
  const caKey = await importSigningKey(ca.keyPem);
  const notBefore = new Date(Math.max(now.getTime() - 60 * 60 * 1000, caCert.notBefore.getTime()));
  const wanted = now.getTime() + (options.serverValidityDays ?? 365) * DAY_MS;
  const notAfter = new Date(Math.min(wanted, caCert.notAfter.getTime()));
  const keys = await generateKeyPair();
  const caPublicKey = await caCert.publicKey.export(EC_ALGORITHM, ["verify"]);
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerial(),
    subject: "CN=localhost",
    issuer: caCert.subject,
    notBefore,
    notAfter,
    signingAlgorithm: SIGNING_ALGORITHM,
    publicKey: keys.publicKey,
    signingKey: caKey,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth], false),
      new x509.SubjectAlternativeNameExtension(
        ENGINE_TLS_HOSTNAMES.map((name) => ({
          type: /^[\d.]+$|:/.test(name) ? "ip" as const : "dns" as const,
          value: name,
        })),
        false,
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(caPublicKey),
    ],
  });
  return { certPem: cert.toString("pem") + "\n", keyPem: await exportKeyPem(keys.privateKey), notAfter };
}

/**
 * Generates a new local CA and a server certificate signed by it.
 *
 * @param options lifetimes and reference time
 * @returns PEM material; pass `{ certPem, keyPem }` to the engine and `caPem` to clients
 */
export async function generateEngineTls(options: EngineTlsOptions = {}): Promise<EngineTlsMaterial> {
  const ca = await generateEngineCa(options);
  const server = await issueServerCertificate(ca, options);
  return {
    caPem: ca.certPem,
    caKeyPem: ca.keyPem,
    certPem: server.certPem,
    keyPem: server.keyPem,
    notAfter: server.notAfter,
    caNotAfter: ca.notAfter,
  };
}

async function keyMatchesCertificate(x509: typeof X509, certPem: string, keyPem: string): Promise<boolean> {
  const cert = new x509.X509Certificate(certPem);
  const publicKey = await cert.publicKey.export(EC_ALGORITHM, ["verify"]);
  const privateKey = await importSigningKey(keyPem);
  const probe = crypto.getRandomValues(new Uint8Array(32));
  const signature = await crypto.subtle.sign(SIGNING_ALGORITHM, privateKey, probe);
  return await crypto.subtle.verify(SIGNING_ALGORITHM, publicKey, signature, probe);
}

/** Whether a CA certificate is a CA and valid from `now` until at least `until`. */
function caCertificateValid(x509: typeof X509, caPem: string, now: Date, until: Date): boolean {
  try {
    const cert = new x509.X509Certificate(caPem);
    if (cert.notBefore > now || cert.notAfter < until) return false;
    return cert.getExtension(x509.BasicConstraintsExtension)?.ca === true;
  } catch {
    return false;
  }
}

async function safeKeyMatches(x509: typeof X509, certPem: string, keyPem: string): Promise<boolean> {
  try {
    return await keyMatchesCertificate(x509, certPem, keyPem);
  } catch {
    return false;
  }
}

/** Whether a server certificate is signed by `caPem`, names every engine hostname and is valid until `until`. */
async function serverUsable(
  x509: typeof X509,
  caPem: string,
  server: PemKeyPair,
  now: Date,
  until: Date,
): Promise<boolean> {
  try {
    const cert = new x509.X509Certificate(server.certPem);
    const caCert = new x509.X509Certificate(caPem);
    if (cert.notBefore > now || cert.notAfter < until) return false;
    if (cert.getExtension(x509.BasicConstraintsExtension)?.ca) return false;
    const san = cert.getExtension(x509.SubjectAlternativeNameExtension);
    const names = new Set(san?.names.items.map((item) => item.value) ?? []);
    if (ENGINE_TLS_HOSTNAMES.some((name) => !names.has(name))) return false;
    if (!(await cert.verify({ publicKey: caCert.publicKey, date: now, signatureOnly: true }))) return false;
    return await safeKeyMatches(x509, server.certPem, server.keyPem);
  } catch {
    return false;
  }
}

async function readOptional(path: string): Promise<string | null> {
  try {
    return await Deno.readTextFile(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return null;
    throw err;
  }
}

/** Writes a file atomically (temporary file + rename) with the given mode. */
async function writeAtomic(path: string, data: string, mode: number): Promise<void> {
  const tmp = `${path}.tmp-${crypto.randomUUID()}`;
  try {
    await Deno.writeTextFile(tmp, data, { mode });
    if (Deno.build.os !== "windows") await Deno.chmod(tmp, mode);
    await Deno.rename(tmp, path);
  } catch (err) {
    await Deno.remove(tmp).catch(() => {});
    throw err;
  }
}

function joinPath(dir: string, name: string): string {
  return dir.endsWith("/") ? `${dir}${name}` : `${dir}/${name}`;
}

/**
 * Loads the engine's TLS material from `dir` (`ca.pem`, `ca.key`, `server.pem`, `server.key`), creating or
 * renewing what is missing, invalid or about to expire. The server certificate is renewed under the same CA
 * when only it is unusable (so clients keep trusting `ca.pem`); everything is regenerated when the CA itself
 * is unusable. Keys are written with mode 0600, the directory is created with mode 0700.
 *
 * @param dir directory holding the files (created if missing)
 * @param options lifetimes and reference time; certificates expiring within 7 days (server) or 30 days (CA)
 *   are replaced
 * @returns the PEM contents, the file paths, and what was generated
 */
export async function loadOrCreateEngineTls(
  dir: string,
  options: EngineTlsOptions = {},
): Promise<EngineTlsFiles> {
  const x509 = await loadX509();
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  const caFile = joinPath(dir, "ca.pem");
  const caKeyFile = joinPath(dir, "ca.key");
  const certFile = joinPath(dir, "server.pem");
  const keyFile = joinPath(dir, "server.key");
  const now = options.now ?? new Date();

  const [caPem, caKeyPem, certPem, keyPem] = await Promise.all(
    [caFile, caKeyFile, certFile, keyFile].map(readOptional),
  );

  const caValid = caPem !== null &&
    caCertificateValid(x509, caPem, now, new Date(now.getTime() + 30 * DAY_MS));
  const caKeyOk = caValid && caKeyPem !== null && await safeKeyMatches(x509, caPem!, caKeyPem);
  const serverOk = caValid && certPem !== null && keyPem !== null &&
    await serverUsable(x509, caPem!, { certPem, keyPem }, now, new Date(now.getTime() + 7 * DAY_MS));

  if (serverOk) {
    const notAfter = new x509.X509Certificate(certPem!).notAfter;
    return {
      caPem: caPem!,
      certPem: certPem!,
      keyPem: keyPem!,
      caFile,
      caKeyFile,
      certFile,
      keyFile,
      notAfter,
      generated: "none",
    };
  }

  let ca: PemKeyPair;
  let generated: "server" | "all";
  if (caKeyOk) {
    ca = { certPem: caPem!, keyPem: caKeyPem! };
    generated = "server";
  } else {
    ca = await generateEngineCa(options);
    generated = "all";
    await writeAtomic(caKeyFile, ca.keyPem, 0o600);
    await writeAtomic(caFile, ca.certPem, 0o644);
  }
  const server = await issueServerCertificate(ca, options);
  await writeAtomic(keyFile, server.keyPem, 0o600);
  await writeAtomic(certFile, server.certPem, 0o644);
  return {
    caPem: ca.certPem,
    certPem: server.certPem,
    keyPem: server.keyPem,
    caFile,
    caKeyFile,
    certFile,
    keyFile,
    notAfter: server.notAfter,
    generated,
  };
}
