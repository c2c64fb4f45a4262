/**
 * `deno task engine`: runs the reference conversation engine from the command line (see `--help` and
 * docs/reference-engine.md). Prints the URL, the CA file to trust and where the token is; logs JSON lines to
 * stderr; closes cleanly on SIGINT/SIGTERM.
 *
 * @module
 */

import { parseEngineArgs, USAGE } from "./cli.ts";
import { startReferenceEngine } from "./server.ts";
import { loadOrCreateEngineTls } from "./tls.ts";
import { loadOrCreateToken } from "./token.ts";
import { checkEspeak, EspeakTts } from "./tts.ts";

function absolute(path: string): string {
  return path.startsWith("/") ? path : `${Deno.cwd()}/${path.replace(/^\.\//, "")}`;
}

function logLine(event: string, fields?: Record<string, unknown>): void {
  const line = JSON.stringify({ ts: new Date().toISOString(), event, ...fields });
  Deno.stderr.writeSync(new TextEncoder().encode(line + "\n"));
}

/**
 * Runs the CLI.
 *
 * @param args command-line arguments
 * @returns the process exit code (0 after a clean shutdown, 1 on a start failure, 2 on a usage error)
 */
export async function main(args: string[]): Promise<number> {
  const parsed = parseEngineArgs(args);
  if (parsed.kind === "help") {
    console.log(USAGE);
    return 0;
  }
  if (parsed.kind === "error") {
    console.error(`engine: ${parsed.message} (see --help)`);
    return 2;
  }
  const o = parsed.options;
  try {
    await checkEspeak();
    const tls = await loadOrCreateEngineTls(o.tlsDir);
    const tokenFile = `${o.tlsDir.replace(/\/$/, "")}/token`;
    const token = o.token ?? (await loadOrCreateToken(tokenFile)).token;
    const engine = await startReferenceEngine({
      hostname: o.host,
      port: o.port,
      path: o.path,
      tls,
      authToken: token,
      mode: o.mode,
      ...(o.greeting !== undefined ? { greeting: o.greeting } : {}),
      demoTool: o.demoTool,
      voice: o.voice,
      tts: new EspeakTts({ voice: o.voice }),
      outputSampleRate: o.outputRate,
      authFailure: o.authFailure,
      log: logLine,
    });
    console.log(`reference engine listening on ${engine.url}`);
    console.log(`CA certificate to trust: ${absolute(tls.caFile)} (SVC_ENGINE_CA_FILE)`);
    console.log(
      o.token !== null
        ? "bearer token: the one given with --token"
        : `bearer token: stored in ${absolute(tokenFile)}`,
    );
    if (tls.generated !== "none") {
      console.log(`TLS material generated (${tls.generated}) in ${absolute(o.tlsDir)}`);
    }

    const stopped = Promise.withResolvers<void>();
    const signals: Deno.Signal[] = Deno.build.os === "windows" ? ["SIGINT"] : ["SIGINT", "SIGTERM"];
    const onSignal = () => stopped.resolve();
    for (const signal of signals) Deno.addSignalListener(signal, onSignal);
    await stopped.promise;
    for (const signal of signals) Deno.removeSignalListener(signal, onSignal);
    console.log("shutting down");
    await engine.close();
    return 0;
  } catch (err) {
    console.error(`engine: ${(err as Error).message}`);
    return 1;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
