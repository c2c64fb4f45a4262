/**
 * What a process trusts when it connects out: the CA certificates of engine connections (the given ones,
 * `SVC_ENGINE_CA_FILE`, the embedded engine's, added later by the caller), and the HTTP clients of webhook
 * deliveries (`SVC_WEBHOOK_CA_FILE`) and of calls to remote workers (`SVC_WORKER_CA_FILE`), each created only
 * when a CA is configured and closed at the end; and the CA certificates of a `wss://` Janus
 * (`SVC_SFU_CA_FILE`: {@link sfuTrust}, read with the media plane).
 *
 * @module
 */
import { type Config, StartupError } from "../config.ts";
import type { Cleanup } from "./cleanup.ts";

/** The trust of outgoing connections. */
export interface Outbound {
  /** CA certificates (PEM) trusted for engine connections beyond the bundled roots. */
  engineCa: string[];
  webhookHttpClient: Deno.HttpClient | undefined;
  workerHttpClient: Deno.HttpClient | undefined;
}

/** Reads the configured CA files and creates the HTTP clients that need them. */
export async function outboundTrust(
  config: Config,
  extra: { caCerts?: string[]; webhookCaCerts?: string[] },
  cleanup: Cleanup,
): Promise<Outbound> {
  const engineCa: string[] = [...(extra.caCerts ?? [])];
  if (config.engineCaFile) engineCa.push(await Deno.readTextFile(config.engineCaFile));
  const webhookCa = [...(extra.webhookCaCerts ?? [])];
  if (config.webhooks.caFile) webhookCa.push(await Deno.readTextFile(config.webhooks.caFile));
  const webhookHttpClient = webhookCa.length ? Deno.createHttpClient({ caCerts: webhookCa }) : undefined;
  if (webhookHttpClient) cleanup.push(() => webhookHttpClient.close());
  const workerHttpClient = config.workerCaFile
    ? Deno.createHttpClient({ caCerts: [await Deno.readTextFile(config.workerCaFile)] })
    : undefined;
  if (workerHttpClient) cleanup.push(() => workerHttpClient.close());
  return { engineCa, webhookHttpClient, workerHttpClient };
}

/**
 * The CA certificates trusted for a `wss://` Janus beside the default roots: `SVC_SFU_CA_FILE`'s (none when it
 * is unset). A file that cannot be read or holds no PEM certificate stops start-up (`StartupError`, one line
 * naming the variable and the path) rather than every session's connect later.
 */
export async function sfuTrust(config: Pick<Config, "sfu">): Promise<string[]> {
  const path = config.sfu?.caFile;
  if (!path) return [];
  let pem: string;
  try {
    pem = await Deno.readTextFile(path);
  } catch (err) {
    throw new StartupError(`SVC_SFU_CA_FILE: cannot read ${JSON.stringify(path)} (${(err as Error).name})`);
  }
  if (!pem.includes("-----BEGIN CERTIFICATE-----")) {
    throw new StartupError(`SVC_SFU_CA_FILE: ${JSON.stringify(path)} holds no PEM certificate`);
  }
  return [pem];
}
