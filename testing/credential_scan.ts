/**
 * The credential memory audit, as the test and the report script run it: a service process (`main.ts` of
 * any checkout, as a child process on a KV file) against the vendor fakes and fake V0 engines of this
 * checkout, with a tagged canary in every credential field of every provider type, and a scan of the
 * service's whole memory ({@link scanProcess}) at these points:
 *
 * - `live` (the positive control): a start held by an engine that accepted the connection and never
 *   answered — the credentials are in use;
 * - `dropped`: that engine then dropped the connection: the start failed (5xx);
 * - `ended`: a session that became active and was ended through the API;
 * - `forced`: the same, ended with `?force=true`;
 * - `timed_out`: a session no client joined, ended by the join window (5 s here);
 * - `refused`: a create the API refused (400) before anything started (an unknown field; for the external
 *   engine, 33 auth headers, one over the limit);
 * - `malformed`: a create whose body is not JSON (cut short after the credentials);
 * - `failed`: a start the engine refused (wrong credentials, 502).
 *
 * Every scan looks for the canaries of every scenario so far, so a copy left by an earlier one shows too.
 * The vendor URLs point at switches (TCP forwarders) the audit turns to the fake or to a silent server.
 *
 * @module
 */
import { generateEngineTls } from "../engine/mod.ts";
import { startVendor1Fake } from "./fakes/vendor1_realtime.ts";
import { startVendor2Fake } from "./fakes/vendor2.ts";
import { startVendor3Fake } from "./fakes/vendor3.ts";
import { startFakeEngine } from "./fake_engine.ts";
import { type Hit, REGION_KINDS, type RegionKind, scanProcess, unreadable } from "./memory_scan.ts";
import { startServiceProcess } from "./service_process.ts";

/** The provider variants audited (vendor3 twice: a minted URL, and a pre-minted one). */
export const VARIANTS = [
  "vendor1_realtime",
  "vendor2",
  "vendor3_mint",
  "vendor3_signed",
  "external_engine",
] as const;
export type Variant = (typeof VARIANTS)[number];

/** The scan points. */
export const POINTS = [
  "live",
  "dropped",
  "ended",
  "forced",
  "timed_out",
  "refused",
  "malformed",
  "failed",
] as const;
export type Point = (typeof POINTS)[number];

/** What one scan found: per canary (`variant.field.scenario`), the copies per region kind. */
export interface ScanResult {
  variant: Variant;
  point: Point;
  hits: Hit[];
  /** The process scanned: the single service process, or the API or the worker of the split. */
  process: "all" | "api" | "worker";
  /** Bytes of the process the scan could not read. */
  unreadableBytes: number;
  /** The canaries looked for (name → value). */
  canaries: string[];
}

/** A canary: a tag and random hex (letters and digits only, so every encoding leaves it as it is). */
function canary(tag: string): string {
  const hex = Array.from(crypto.getRandomValues(new Uint8Array(12)), (b) => b.toString(16).padStart(2, "0"))
    .join("");
  return `cnry${tag}${hex}`;
}

/** A TCP forwarder whose target can be changed between connections. */
interface Switch {
  port: number;
  target: number;
  close(): Promise<void>;
}

function tcpSwitch(target: number): Switch {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns = new Set<Deno.Conn>();
  const sw: Switch = {
    port: (listener.addr as Deno.NetAddr).port,
    target,
    async close() {
      listener.close();
      for (const c of conns) {
        try {
          c.close();
        } catch { /* closed */ }
      }
      await served;
    },
  };
  const pipe = async (from: Deno.Conn, to: Deno.Conn) => {
    const buf = new Uint8Array(64 * 1024);
    try {
      for (;;) {
        const n = await from.read(buf);
        if (n === null) break;
        let off = 0;
        while (off < n) off += await to.write(buf.subarray(off, n));
      }
    } catch { /* either side closed */ }
    for (const c of [from, to]) {
      try {
        c.close();
      } catch { /* closed */ }
      conns.delete(c);
    }
  };
  const served = (async () => {
    const tasks: Promise<void>[] = [];
    try {
      for await (const conn of listener) {
        conns.add(conn);
        tasks.push((async () => {
          let up: Deno.Conn;
          try {
            up = await Deno.connect({ hostname: "127.0.0.1", port: sw.target });
          } catch {
            conn.close();
            conns.delete(conn);
            return;
          }
          conns.add(up);
          await Promise.all([pipe(conn, up), pipe(up, conn)]);
        })());
      }
    } catch { /* closed */ }
    await Promise.all(tasks);
  })();
  return sw;
}

/** A TLS server that accepts connections, reads what comes and never answers; counts requests seen. */
function silentTls(tls: { certPem: string; keyPem: string }) {
  const listener = Deno.listenTls({ hostname: "127.0.0.1", port: 0, cert: tls.certPem, key: tls.keyPem });
  const conns = new Set<Deno.Conn>();
  let requests = 0;
  const served = (async () => {
    const tasks: Promise<void>[] = [];
    try {
      for await (const conn of listener) {
        conns.add(conn);
        tasks.push((async () => {
          const buf = new Uint8Array(16 * 1024);
          let seen = 0;
          try {
            for (;;) {
              const n = await conn.read(buf);
              if (n === null) break;
              seen += n;
              if (seen > 0 && buf.subarray(0, n).includes(0x0a)) requests++;
            }
          } catch { /* closed */ }
          buf.fill(0);
          conns.delete(conn);
          try {
            conn.close();
          } catch { /* closed */ }
        })());
      }
    } catch { /* closed */ }
    await Promise.all(tasks);
  })();
  return {
    port: (listener.addr as Deno.NetAddr).port,
    get requests() {
      return requests;
    },
    dropAll() {
      for (const c of conns) {
        try {
          c.close();
        } catch { /* closed */ }
      }
    },
    async close() {
      listener.close();
      this.dropAll();
      await served;
    },
  };
}

async function untilAsync(
  what: string,
  predicate: () => Promise<boolean>,
  timeoutMs = 60_000,
): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function until(what: string, predicate: () => boolean, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Options of {@link runCredentialScan}. */
export interface ScanOptions {
  /** The checkout whose `main.ts` runs (default: this one). */
  root?: string;
  /** The variants to audit (default: all). */
  variants?: readonly Variant[];
  /** Called with each scan's result as it is made. */
  onScan?: (r: ScanResult) => void;
  /** Connect deadline of the service (the `live` scan happens within it; default 30 s). */
  connectTimeoutMs?: number;
  /** More environment of the service process (e.g. glibc's malloc tunables). */
  env?: Record<string, string>;
  /**
   * One service process (`single`, default), or an API process (the Deno Deploy-like sandbox) and a worker
   * sharing a KV Connect server (`split`): the API hands each start's credentials to the worker, and both
   * processes are scanned.
   */
  deployment?: "single" | "split";
  /** More Deno flags of the service processes (e.g. the start task's `--v8-flags=…`). */
  flags?: string[];
  /**
   * After each ending, scan again until no copy of a credential is left or this much time has passed (the
   * runtime frees a connection's buffers once it has closed it, a moment after the client read the answer);
   * default 0: one scan.
   */
  settleMs?: number;
  /**
   * Before each scan after an ending, the service serves this many ordinary requests (an authenticated
   * listing of one session), as a live service does between its creates; default 0.
   */
  trafficRequests?: number;
}

/** Runs the audit; returns every scan's result. Throws when the service does not behave as expected. */
export async function runCredentialScan(options: ScanOptions = {}): Promise<ScanResult[]> {
  const root = options.root ?? new URL("..", import.meta.url).pathname;
  const variants = options.variants ?? VARIANTS;
  const tls = await generateEngineTls();
  const dir = await Deno.makeTempDir({ prefix: "svc-memscan-" });
  const agent = "agent_scan";
  // The canaries of the scenarios where the engine accepts them.
  const ok = {
    v1: canary("v1secretended"),
    v2: canary("v2tokenended"),
    v3key: canary("v3keyended"),
    v3sig: canary("v3sigended"),
  };
  const v1 = startVendor1Fake(tls, { secret: ok.v1 });
  const v2 = startVendor2Fake(tls, { token: ok.v2, agents: [agent] });
  const v3 = startVendor3Fake(tls, {
    publicAgents: [],
    privateAgents: [agent],
    apiKey: ok.v3key,
    signatures: [`cvtkn_${ok.v3sig}`],
  });
  const engineOk = await startFakeEngine(tls, "ok");
  const engineRefusing = await startFakeEngine(tls, "reject_401");
  const silent = silentTls(tls);
  const portOf = (url: string) => Number(new URL(url).port);
  const sw = {
    v1: tcpSwitch(portOf(v1.url)),
    v2: tcpSwitch(portOf(v2.url)),
    v3: tcpSwitch(portOf(v3.url)),
    v3api: tcpSwitch(portOf(v3.apiUrl)),
  };
  await Deno.writeTextFile(`${dir}/ca.pem`, tls.caPem);
  const connectTimeoutMs = options.connectTimeoutMs ?? 30_000;
  const serviceEnv = {
    SVC_ENGINE_CA_FILE: `${dir}/ca.pem`,
    SVC_VENDOR1_REALTIME_URL: `wss://localhost:${sw.v1.port}/v1/realtime`,
    SVC_VENDOR2_URL: `wss://localhost:${sw.v2.port}/v1/agents/websocket`,
    SVC_VENDOR3_URL: `wss://localhost:${sw.v3.port}/v1/convai/conversation`,
    SVC_VENDOR3_API_URL: `https://localhost:${sw.v3api.port}`,
    SVC_VENDOR3_SIGNED_URL_HOSTS: "localhost",
    SVC_PROVIDER_CONNECT_TIMEOUT_MS: String(connectTimeoutMs),
    SVC_MEDIA_ENABLED: "false",
    SVC_DEMO_PAGE: "false",
    SVC_RATE_LIMIT_PER_MINUTE: "0",
    SVC_SESSION_JOIN_WINDOW_S: "5",
    ...options.env,
  };
  const deployment = options.deployment === "split"
    ? await splitDeployment(dir, serviceEnv, options.flags ?? [])
    : await singleDeployment(root, dir, serviceEnv, options.flags ?? []);
  const { apiKey } = deployment;
  const results: ScanResult[] = [];
  const needles = new Map<string, Uint8Array>();
  const plant = (name: string, value: string) => {
    needles.set(name, new TextEncoder().encode(value));
    return value;
  };
  const headers = { authorization: `Bearer ${apiKey}`, "content-type": "application/json" };
  const post = async (path: string, body?: unknown) => {
    const res = await fetch(`${deployment.url}${path}`, {
      method: "POST",
      headers,
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  const scan = async (variant: Variant, point: Point) => {
    if (point !== "live") {
      for (let i = 0; i < (options.trafficRequests ?? 0); i++) {
        const res = await fetch(`${deployment.url}/v1/sessions?limit=1`, { headers });
        await res.body?.cancel();
      }
    }
    for (const { role, pid } of deployment.processes) {
      const before = unreadable.bytes;
      const settleUntil = point === "live" ? 0 : Date.now() + (options.settleMs ?? 0);
      let hits = scanProcess(pid, needles);
      while (hits.length && Date.now() < settleUntil) {
        await new Promise((r) => setTimeout(r, 250));
        hits = scanProcess(pid, needles);
      }
      const r: ScanResult = {
        variant,
        point,
        process: role,
        hits,
        unreadableBytes: unreadable.bytes - before,
        canaries: [...needles.keys()],
      };
      results.push(r);
      options.onScan?.(r);
    }
  };
  const expect = (res: { status: number; body: unknown }, status: number, what: string) => {
    if (res.status !== status) {
      throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)} (wanted ${status})`);
    }
  };
  const signedUrl = (port: number, sig: string) =>
    `wss://localhost:${port}/v1/convai/conversation?agent_id=${agent}&conversation_signature=cvtkn_${sig}`;

  /** The provider config of `variant` with canaries for `scenario`; `good` for the accepted ones. */
  const config = (variant: Variant, scenario: Point, target: "fake" | "silent" | "refusing") => {
    const tag = (field: string) => `${variant}.${field}.${scenario}`;
    // The sessions that run use the credentials the fakes accept (one per fake: the same bytes each time).
    const runs = scenario === "ended" || scenario === "forced" || scenario === "timed_out";
    const pick = (field: string, accepted: string) =>
      plant(tag(field), runs ? accepted : canary(`${field.replace(/_/g, "")}${scenario}`));
    switch (variant) {
      case "vendor1_realtime":
        return { vendor1_realtime: { client_secret: pick("client_secret", ok.v1) } };
      case "vendor2":
        return { vendor2: { access_token: pick("access_token", ok.v2), agent_id: agent } };
      case "vendor3_mint":
        return { vendor3: { agent_id: agent, api_key: pick("api_key", ok.v3key) } };
      case "vendor3_signed": {
        const port = target === "silent" ? silent.port : portOf(v3.url);
        return { vendor3: { agent_id: agent, signed_url: signedUrl(port, pick("signed_url", ok.v3sig)) } };
      }
      case "external_engine": {
        const base = target === "silent"
          ? `wss://localhost:${silent.port}/v0`
          : target === "refusing"
          ? engineRefusing.url
          : engineOk.url;
        const headers: Record<string, string> = {
          Authorization: `Bearer ${plant(tag("auth_header_1"), canary(`hdra${scenario}`))}`,
          "X-Engine-Key": plant(tag("auth_header_2"), canary(`hdrb${scenario}`)),
        };
        if (scenario === "refused") {
          // One header over the limit of 32: each value carries one more canary (one needle finds them all).
          const more = plant(tag("auth_headers_33"), canary(`hdrn${scenario}`));
          for (let i = 3; i <= 33; i++) headers[`X-Extra-${i}`] = `${more}-${i}`;
        }
        return {
          external_engine: {
            url: `${base}?k=${plant(tag("url"), canary(`url${scenario}`))}`,
            auth_headers: headers,
          },
        };
      }
    }
  };
  const providerType = (v: Variant) => v.startsWith("vendor3") ? "vendor3" : v;
  const switchOf = (v: Variant): Switch | null =>
    v === "vendor1_realtime" ? sw.v1 : v === "vendor2" ? sw.v2 : v === "vendor3_mint" ? sw.v3api : null;
  const fakePort = (v: Variant) =>
    v === "vendor1_realtime"
      ? portOf(v1.url)
      : v === "vendor2"
      ? portOf(v2.url)
      : v === "vendor3_mint"
      ? portOf(v3.apiUrl)
      : 0;

  try {
    for (const variant of variants) {
      const type = providerType(variant);
      const s = switchOf(variant);
      // live, then dropped: the engine (or the mint) accepts the connection and does not answer; once the
      // live scan is done, it drops the connection and the start fails.
      if (s) s.target = silent.port;
      const seen = silent.requests;
      const pending = post("/v1/sessions", {
        provider_type: type,
        provider_config: config(variant, "live", "silent"),
      });
      await until(`${variant}: the held start`, () => silent.requests > seen);
      await scan(variant, "live");
      if (s) s.target = fakePort(variant);
      silent.dropAll();
      const dropped = await pending;
      if (dropped.status < 500) throw new Error(`${variant} dropped start: ${dropped.status}`);
      await scan(variant, "dropped");
      // ended: a session that ran, ended through the API.
      const created = await post("/v1/sessions", {
        provider_type: type,
        provider_config: config(variant, "ended", "fake"),
      });
      expect(created, 200, `${variant} create`);
      if (variant === "vendor3_mint") {
        // The signature the fake minted, as it reached the conversation socket.
        const minted = v3.server.requests.map((r) => r.url.searchParams.get("conversation_signature"))
          .filter((x) => x && !x.includes(ok.v3sig)).at(-1);
        if (minted) plant(`${variant}.minted_signature.ended`, minted);
      }
      expect(
        await post(`/v1/sessions/${(created.body as { session_id: string }).session_id}/end`),
        200,
        `${variant} end`,
      );
      await scan(variant, "ended");
      // forced: the same, ended at once.
      const forced = await post("/v1/sessions", {
        provider_type: type,
        provider_config: config(variant, "forced", "fake"),
      });
      expect(forced, 200, `${variant} create (forced)`);
      expect(
        await post(`/v1/sessions/${(forced.body as { session_id: string }).session_id}/end?force=true`),
        200,
        `${variant} forced end`,
      );
      await scan(variant, "forced");
      // timed_out: no client joins; the join window ends it.
      const lonely = await post("/v1/sessions", {
        provider_type: type,
        provider_config: config(variant, "timed_out", "fake"),
      });
      expect(lonely, 200, `${variant} create (join window)`);
      const lonelyId = (lonely.body as { session_id: string }).session_id;
      await untilAsync(`${variant}: the join window's end`, async () => {
        const res = await fetch(`${deployment.url}/v1/sessions/${lonelyId}`, { headers });
        const body = await res.json();
        return body.end_reason === "no_client_joined";
      });
      await scan(variant, "timed_out");
      // refused: a create that fails validation (an unknown field next to the credentials; 33 headers).
      const refused = config(variant, "refused", "fake") as unknown as Record<
        string,
        Record<string, unknown>
      >;
      if (variant !== "external_engine") Object.values(refused)[0].unknown_field = true;
      expect(
        await post("/v1/sessions", { provider_type: type, provider_config: refused }),
        400,
        `${variant} refused`,
      );
      await scan(variant, "refused");
      // malformed: the body is cut short after the credentials.
      const whole = JSON.stringify({
        provider_type: type,
        provider_config: config(variant, "malformed", "fake"),
      });
      expect(await post("/v1/sessions", whole.slice(0, -3)), 400, `${variant} malformed`);
      await scan(variant, "malformed");
      // failed: the engine refuses the credentials.
      const failed = await post("/v1/sessions", {
        provider_type: type,
        provider_config: config(variant, "failed", "refusing"),
      });
      expect(failed, 502, `${variant} failed start`);
      await scan(variant, "failed");
    }
  } finally {
    await deployment.close();
    for (const s of Object.values(sw)) await s.close();
    await silent.close();
    await engineOk.close();
    await engineRefusing.close();
    await v1.close();
    await v2.close();
    await v3.close();
    await Deno.remove(dir, { recursive: true });
  }
  return results;
}

/** Copies per region kind of the hits whose canary name matches `filter`. */
export function countByRegion(
  hits: Hit[],
  filter: (needle: string) => boolean = () => true,
): Record<RegionKind, number> {
  const out = Object.fromEntries(REGION_KINDS.map((k) => [k, 0])) as Record<RegionKind, number>;
  for (const h of hits) if (filter(h.needle)) out[h.region]++;
  return out;
}

/** The service under audit: where its API answers, the scanned processes, how to stop it. */
interface Deployment {
  url: string;
  apiKey: string;
  processes: { role: ScanResult["process"]; pid: number }[];
  close(): Promise<void>;
}

async function singleDeployment(
  root: string,
  dir: string,
  env: Record<string, string>,
  flags: string[],
): Promise<Deployment> {
  const kvPath = `${dir}/svc.kv`;
  const boot = await new Deno.Command(Deno.execPath(), {
    args: [
      "task",
      "--quiet",
      "cli",
      "admin",
      "bootstrap",
      "--project",
      "proj_scan",
      "--name",
      "scan",
      "--json",
    ],
    cwd: root,
    env: { SVC_KV: kvPath },
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (boot.code !== 0) throw new Error(`bootstrap failed: ${new TextDecoder().decode(boot.stderr)}`);
  const apiKey = JSON.parse(new TextDecoder().decode(boot.stdout)).api_key as string;
  const proc = await startServiceProcess({ SVC_KV: kvPath, ...env }, { root, flags });
  return {
    url: proc.url,
    apiKey,
    processes: [{ role: "all", pid: proc.child.pid }],
    async close() {
      proc.kill("SIGTERM");
      await proc.exited();
    },
  };
}

async function splitDeployment(
  dir: string,
  env: Record<string, string>,
  flags: string[],
): Promise<Deployment> {
  const { startApi, startKvConnect, startWorker } = await import("./split.ts");
  const { runCli } = await import("./cli.ts");
  const kv = await startKvConnect(dir);
  const stops: (() => Promise<unknown>)[] = [async () => await kv.close()];
  const close = async () => {
    for (const stop of stops.reverse()) await stop();
  };
  try {
    const worker = await startWorker(kv, env, { flags });
    stops.push(async () => {
      worker.kill("SIGTERM");
      await worker.exited();
    });
    const api = await startApi(kv, env, { flags });
    stops.push(async () => {
      api.kill("SIGTERM");
      await api.exited();
    });
    const boot = await runCli(["admin", "bootstrap", "--project", "proj_scan", "--name", "scan", "--json"], {
      env: kv.env,
    });
    if (boot.code !== 0) throw new Error(`bootstrap: ${boot.stderr}`);
    return {
      url: api.url,
      apiKey: JSON.parse(boot.stdout).api_key as string,
      processes: [{ role: "api", pid: api.child.pid }, { role: "worker", pid: worker.child.pid }],
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}
