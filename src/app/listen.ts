/**
 * The process's HTTP server: `Deno.serve` on `HOST`/`PORT`, the loopback form of its URL, and the public URL
 * when `PORT=0` left the default one naming port 0 (the bound port is used instead).
 *
 * @module
 */
import type { Config } from "../config.ts";
import type { Cleanup } from "./cleanup.ts";

/** A listening server: its loopback URL and the public URL the service advertises. */
export interface Listening {
  server: Deno.HttpServer<Deno.NetAddr>;
  url: string;
  publicUrl: string;
}

/** Serves `fetch`; registers the server's shutdown. */
export function listen(
  config: Config,
  fetch: (req: Request) => Response | Promise<Response>,
  signal: AbortSignal | undefined,
  cleanup: Cleanup,
): Listening {
  const server = Deno.serve({ hostname: config.host, port: config.port, signal, onListen: () => {} }, fetch);
  cleanup.push(() => server.shutdown());
  const hostPart = config.host.includes(":") ? `[${config.host}]` : config.host;
  const url = `http://${hostPart === "0.0.0.0" ? "127.0.0.1" : hostPart}:${server.addr.port}`;
  // With PORT=0 and no SVC_PUBLIC_URL, the default public URL names port 0: use the bound port.
  const publicUrl = config.port === 0 && config.publicUrl === "http://localhost:0"
    ? `http://localhost:${server.addr.port}`
    : config.publicUrl;
  return { server, url, publicUrl };
}
