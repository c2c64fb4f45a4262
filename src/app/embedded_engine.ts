/**
 * The reference engine inside a process that runs sessions (the embedded default, `SVC_REFERENCE_ENGINE`):
 * its TLS certificate and token loaded or created under `SVC_REFERENCE_ENGINE_DIR`, and the engine started on
 * loopback. The one place `src/` starts `engine/` (loaded with `await import()`: an `api` process never loads
 * it), as docs/architecture.md draws it.
 *
 * @module
 */
import type { ReferenceEngineStats } from "../../engine/mod.ts";
import type { Config } from "../config.ts";
import type { Logger } from "../log.ts";

/** The reference engine running in this process (the embedded default). */
export interface EmbeddedEngine {
  url: string;
  caFile: string;
  tokenFile: string;
  token: string;
  stats(): ReferenceEngineStats;
}

/** The started engine: what the service reports of it, its CA (trusted by the bridges), and its closing. */
export interface StartedEngine {
  engine: EmbeddedEngine;
  caPem: string;
  close(): Promise<void>;
}

/** Starts the reference engine on loopback, on `SVC_REFERENCE_ENGINE_PORT`. */
export async function startEmbeddedEngine(config: Config, logger: Logger): Promise<StartedEngine> {
  const { loadOrCreateEngineTls, loadOrCreateToken, startReferenceEngine } = await import(
    "../../engine/mod.ts"
  );
  const dir = config.referenceEngine.dir;
  const tls = await loadOrCreateEngineTls(dir);
  const tokenFile = `${dir}/token`;
  const { token } = await loadOrCreateToken(tokenFile);
  const engine = await startReferenceEngine({
    hostname: "127.0.0.1",
    port: config.referenceEngine.port,
    tls: { certPem: tls.certPem, keyPem: tls.keyPem },
    authToken: token,
  });
  logger.info("reference engine listening", { url: engine.url, ca_file: tls.caFile, token_file: tokenFile });
  return {
    engine: { url: engine.url, caFile: tls.caFile, tokenFile, token, stats: () => engine.stats() },
    caPem: tls.caPem,
    close: async () => await engine.close(),
  };
}
