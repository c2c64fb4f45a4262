/**
 * The split deployment as real OS processes, for tests: a KV Connect server (the test fixture in
 * `tests/fixtures/kv_connect_server.ts`), workers (`SVC_ROLE=worker`) and API processes (`SVC_ROLE=api`,
 * under the Deno Deploy-like sandbox), all sharing its KV.
 *
 * @module
 */
import { type ServiceProcess, type ServiceProcessOptions, startServiceProcess } from "./service_process.ts";
import { TEST_TOKEN_SECRET } from "./harness.ts";

/** The permissions of an API process: what Deno Deploy allows (no subprocess, no file writes, no FFI). */
export const SANDBOX = [
  "--allow-net",
  "--allow-env",
  "--allow-read",
  "--deny-run",
  "--deny-write",
  "--deny-ffi",
];

/** Shared by the API processes and workers of a test deployment. */
export const TEST_INTERNAL_SECRET = "test-internal-secret-0123456789abcdefghij";

/** A running KV Connect server. */
export interface KvConnect {
  url: string;
  token: string;
  /** The SQLite file behind it. */
  path: string;
  /** The environment a process needs to use it. */
  env: Record<string, string>;
  close(): Promise<void>;
}

/** Starts the KV Connect test server on a SQLite file in `dir`. */
export async function startKvConnect(dir: string): Promise<KvConnect> {
  const token = crypto.randomUUID();
  const path = `${dir}/kv.sqlite3`;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "tests/fixtures/kv_connect_server.ts", path],
    cwd: new URL("..", import.meta.url),
    env: { KV_ACCESS_TOKEN: token },
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  let url = "";
  while (!url) {
    const { value, done } = await reader.read();
    if (done) break;
    out += value;
    url = /"url":"(http:\/\/[^"]+)"/.exec(out)?.[1] ?? "";
  }
  const drain = (async () => {
    while (!(await reader.read()).done) { /* keep the pipe flowing */ }
  })();
  if (!url) {
    child.kill("SIGKILL");
    await child.status;
    throw new Error(`the KV Connect server did not start: ${out}`);
  }
  return {
    url,
    token,
    path,
    env: { SVC_KV: url, DENO_KV_ACCESS_TOKEN: token },
    async close() {
      try {
        child.kill("SIGTERM");
      } catch { /* gone */ }
      await child.status;
      await drain;
    },
  };
}

/** A free loopback port (bound, then released). */
export function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/** Starts a worker process on a port of its own; `env` adds to its configuration. */
export async function startWorker(
  kv: KvConnect,
  env: Record<string, string> = {},
  options: ServiceProcessOptions = {},
): Promise<ServiceProcess & { port: number }> {
  const port = freePort();
  const base = `http://127.0.0.1:${port}`;
  const proc = await startServiceProcess({
    ...kv.env,
    SVC_ROLE: "worker",
    PORT: String(port),
    SVC_WORKER_URL: base,
    SVC_PUBLIC_URL: base,
    SVC_INTERNAL_SECRET: TEST_INTERNAL_SECRET,
    SVC_TOKEN_SECRET: TEST_TOKEN_SECRET,
    SVC_OWNER_LEASE_S: "3",
    ...env,
  }, options);
  return Object.assign(proc, { port });
}

/** Starts an API process under the sandbox. */
export async function startApi(
  kv: KvConnect,
  env: Record<string, string> = {},
  options: Omit<ServiceProcessOptions, "permissions"> = {},
): Promise<ServiceProcess> {
  return await startServiceProcess({
    ...kv.env,
    SVC_ROLE: "api",
    SVC_INTERNAL_SECRET: TEST_INTERNAL_SECRET,
    SVC_TOKEN_SECRET: TEST_TOKEN_SECRET,
    SVC_OWNER_LEASE_S: "3",
    ...env,
  }, { ...options, permissions: SANDBOX });
}

/** The child processes of `pid` (every thread's children). */
export function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const t of Deno.readDirSync(`/proc/${pid}/task`)) {
    const text = Deno.readTextFileSync(`/proc/${pid}/task/${t.name}/children`).trim();
    if (text) out.push(...text.split(/\s+/).map(Number));
  }
  return out;
}
