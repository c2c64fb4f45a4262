/**
 * What a process trusts when it connects out: the CA certificates of engine connections (the given ones,
 * `SVC_ENGINE_CA_FILE`, the embedded engine's, added later by the caller), and the HTTP clients of webhook
 * deliveries (`SVC_WEBHOOK_CA_FILE`) and of calls to remote workers (`SVC_WORKER_CA_FILE`), each created only
 * when a CA is configured and closed at the end.
 *
 * @module
 */
import type { Config } from "../config.ts";
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
