/**
 * A real service process for black-box tests: `startService` on 127.0.0.1 port 0 with a KV file and the
 * embedded reference engine (port 0) in a temporary folder, logs captured, plus a way to mint keys into
 * its KV while it runs.
 *
 * @module
 */
import type { Scope } from "../src/auth/scopes.ts";
import { loadConfig } from "../src/config.ts";
import { createApiKey } from "../src/kv/api_keys.ts";
import { createLogger } from "../src/log.ts";
import { compose as startService } from "../src/app/compose.ts";
// The worker side, loaded with this module rather than by compose()'s `await import()` during a test: its
// lip-sync module opens libespeak-ng when first imported, which the resource sanitizer would count as the
// test's own.
import "../src/app/worker_side.ts";

/** A running service in a temporary folder. */
export interface TestService {
  /** Base URL, e.g. `http://127.0.0.1:41234`. */
  url: string;
  /** The KV file (for `admin bootstrap` with `SVC_KV`). */
  kvPath: string;
  /** The reference engine's wss:// URL and bearer token. */
  engine: { url: string; token: string };
  /** Every log line the service wrote. */
  logs: string[];
  /** Mints a key for `projectId` straight into the KV; returns its plaintext. */
  key(projectId: string, scopes?: Scope[]): Promise<string>;
  /** A request body that starts a session on the reference engine. */
  engineBody(token?: string): {
    provider_type: "external_engine";
    provider_config: { external_engine: { url: string; auth_headers: Record<string, string> } };
  };
  /** Stops the service and removes the folder. */
  close(): Promise<void>;
}

/** Starts a service; `env` overrides the configuration. */
export async function startTestService(env: Record<string, string> = {}): Promise<TestService> {
  const dir = await Deno.makeTempDir({ prefix: "svc_test_" });
  const kvPath = `${dir}/svc.kv`;
  const logs: string[] = [];
  const config = loadConfig({
    PORT: "0",
    SVC_KV: kvPath,
    SVC_REFERENCE_ENGINE_PORT: "0",
    SVC_REFERENCE_ENGINE_DIR: `${dir}/engine`,
    ...env,
  });
  const service = await startService(config, { logger: createLogger({ sink: (l) => logs.push(l) }) });
  const engine = service.referenceEngine!;
  return {
    url: service.url!,
    kvPath,
    engine: { url: engine.url, token: engine.token },
    logs,
    async key(projectId, scopes = ["sessions:read", "sessions:write", "api_keys:read", "api_keys:write"]) {
      const kv = await Deno.openKv(kvPath);
      try {
        const { plaintext } = await createApiKey(kv, {
          projectId,
          name: "test",
          scopes,
          now: Date.now(),
          createdBy: "bootstrap",
        });
        return plaintext;
      } finally {
        kv.close();
      }
    },
    engineBody(token = engine.token) {
      return {
        provider_type: "external_engine",
        provider_config: {
          external_engine: { url: engine.url, auth_headers: { Authorization: `Bearer ${token}` } },
        },
      };
    },
    async close() {
      await service.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/**
 * A loopback port nothing listens on. It is drawn from 10000–19999, below the kernel's ephemeral range
 * (32768–60999 on Linux) and the UDP ranges the Janus and coturn fixtures take (20000 and up): a port picked
 * with port 0 and released is the next one another test's port-0 listener or outgoing connection may take,
 * and a connection to it is then answered instead of refused (a CI run saw that).
 */
export function closedPort(): number {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 10000 + Math.floor(Math.random() * 10000);
    try {
      Deno.listen({ hostname: "127.0.0.1", port }).close();
      return port;
    } catch (err) {
      if (!(err instanceof Deno.errors.AddrInUse)) throw err;
    }
  }
  throw new Error("no closed loopback port found in 10000-19999");
}
