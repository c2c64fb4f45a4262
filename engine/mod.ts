/**
 * Reference conversation engine for the external conversation engine protocol V0
 * (docs/engine-protocol-v0.md, docs/reference-engine.md).
 *
 * ```ts
 * import { loadOrCreateEngineTls, startReferenceEngine } from "./engine/mod.ts";
 * const tls = await loadOrCreateEngineTls(".data/reference-engine");
 * const engine = await startReferenceEngine({ tls, authToken: "secret", port: 8788 });
 * console.log(engine.url); // wss://localhost:8788/v0, trust tls.caFile
 * await engine.close();
 * ```
 *
 * @module
 */

export {
  DEFAULT_GREETING,
  type ReferenceEngine,
  type ReferenceEngineOptions,
  type ReferenceEngineStats,
  startReferenceEngine,
} from "./server.ts";
export type { EngineSessionStats } from "./stats.ts";
export type { SessionTimings } from "./session.ts";
export type { ConversationMode } from "./conversation.ts";
export {
  ENGINE_TLS_HOSTNAMES,
  type EngineTlsFiles,
  type EngineTlsMaterial,
  type EngineTlsOptions,
  generateEngineCa,
  generateEngineTls,
  issueServerCertificate,
  loadOrCreateEngineTls,
  type PemKeyPair,
} from "./tls.ts";
export { checkEspeak, EspeakTts, type EspeakTtsOptions, type Tts, TtsError } from "./tts.ts";
export {
  EnergyVad,
  type ResolvedVadOptions,
  resolveVadOptions,
  type VadEvent,
  type VadOptions,
  type VadSpeechStarted,
  type VadTurnEnded,
} from "../src/speech/vad.ts";
export { CloseCode, SUBPROTOCOL } from "../src/speech/v0_protocol.ts";
export { loadOrCreateToken } from "./token.ts";
