/**
 * A real Janus (Debian's `janus`) and a real coturn (`turnserver`) for tests and benches, each started with a
 * generated configuration in a temp dir: APIs on loopback, free ports found at run time, small UDP port
 * ranges, and the process always killed by `stop()` (call it in `finally`).
 *
 * ICE on one host: Janus 1.1.2 never gathers a loopback candidate, so its ICE is enforced onto the host's
 * own non-loopback address (traffic to it stays on `lo`; see the SFU notes). {@link hostAddress} finds it.
 *
 * @module
 */
import dgram from "node:dgram";

/** Where Debian installs Janus's modules. */
const JANUS_LIB = "/usr/lib/x86_64-linux-gnu/janus";

/** The host's first non-loopback IPv4 address (Janus's ICE candidate), or null when it has none. */
export function hostAddress(): string | null {
  const found = Deno.networkInterfaces().find((i) =>
    i.family === "IPv4" && !i.address.startsWith("127.") && i.address !== "0.0.0.0"
  );
  return found?.address ?? null;
}

/** A free TCP port on 127.0.0.1 (bound and released). */
export function freeTcpPort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

async function udpFree(port: number, host: string): Promise<boolean> {
  const s = dgram.createSocket("udp4");
  try {
    return await new Promise<boolean>((resolve) => {
      s.once("error", () => resolve(false));
      s.bind(port, host, () => resolve(true));
    });
  } finally {
    await new Promise<void>((r) => {
      try {
        s.close(() => r());
      } catch {
        r();
      }
    });
  }
}

/** `count` consecutive UDP ports free on every host in `hosts` (random base, a few attempts). */
export async function freeUdpRange(count: number, hosts: string[] = ["0.0.0.0"]): Promise<[number, number]> {
  for (let attempt = 0; attempt < 40; attempt++) {
    const base = 20000 + Math.floor(Math.random() * 2000) * 20;
    let ok = true;
    for (let p = base; p < base + count && ok; p++) {
      for (const h of hosts) if (!(await udpFree(p, h))) ok = false;
    }
    if (ok) return [base, base + count - 1];
  }
  throw new Error("no free UDP port range found");
}

/** A running Janus. */
export interface JanusProcess {
  /** WebSocket API URL (`ws://127.0.0.1:<port>`). */
  url: string;
  /** The TLS WebSocket API's URL (`wss://localhost:<port>`) when started with `tls`, else null. */
  wssUrl: string | null;
  /** Janus's `api_secret` and the plugins' `admin_key`. */
  secret: string;
  /** The address Janus's ICE uses. */
  iceAddress: string;
  pid: number;
  dir: string;
  /** The log so far. */
  log(): Promise<string>;
  /** CPU seconds (user + system) Janus has used so far. */
  cpuSeconds(): number;
  /** Kills Janus (SIGKILL) and waits for it to exit; the config dir is kept for {@link restart}. */
  kill(): Promise<void>;
  /** Starts Janus again on the same config and ports; resolves when its API answers. */
  restart(): Promise<void>;
  /** Kills Janus and removes its files. Idempotent. */
  stop(): Promise<void>;
}

/** Options of {@link startJanus}. */
export interface JanusOptions {
  /** The secret (default: random). */
  secret?: string;
  /** The plugins' `admin_key` (default: the secret). */
  adminKey?: string;
  /** Janus's ICE address (default: {@link hostAddress}). */
  iceAddress?: string;
  /** Streaming plugin RTP ports (ingest of mountpoints created with port 0); default 40 ports. */
  ingestPorts?: number;
  /** ICE ports; default 40. */
  icePorts?: number;
  /** How long to wait for the API to answer, ms (default 30 s). */
  readyTimeoutMs?: number;
  /** A certificate and key (PEM) for a second, TLS, WebSocket API on 127.0.0.1 (`wssUrl`). */
  tls?: { certPem: string; keyPem: string };
}

/**
 * Starts Janus with a generated config (WebSocket API on 127.0.0.1, Streaming + VideoRoom only). A port
 * taken between being found free and Janus binding it (tests run in parallel) costs a retry on new ports.
 */
export async function startJanus(options: JanusOptions = {}): Promise<JanusProcess> {
  for (let attempt = 1;; attempt++) {
    try {
      return await startJanusOnce(options);
    } catch (err) {
      if (attempt >= 3) throw err;
    }
  }
}

async function startJanusOnce(options: JanusOptions): Promise<JanusProcess> {
  const iceAddress = options.iceAddress ?? hostAddress();
  if (!iceAddress) throw new Error("Janus needs a non-loopback IPv4 address on this host for its ICE");
  const secret = options.secret ?? crypto.randomUUID().replaceAll("-", "");
  const adminKey = options.adminKey ?? secret;
  const dir = await Deno.makeTempDir({ prefix: "janus-" });
  const wsPort = freeTcpPort();
  const wssPort = options.tls ? freeTcpPort() : null;
  const ice = await freeUdpRange(options.icePorts ?? 40, [iceAddress]);
  const ingest = await freeUdpRange(options.ingestPorts ?? 40, ["127.0.0.1"]);
  const files: Record<string, string> = {
    "janus.jcfg": `general: {
  configs_folder = "${dir}"
  plugins_folder = "${JANUS_LIB}/plugins"
  transports_folder = "${JANUS_LIB}/transports"
  events_folder = "${JANUS_LIB}/events"
  loggers_folder = "${JANUS_LIB}/loggers"
  debug_level = 4
  api_secret = "${secret}"
  session_timeout = 60
  server_name = "svc-test"
}
certificates: { }
media: { rtp_port_range = "${ice[0]}-${ice[1]}" }
nat: {
  ice_enforce_list = "${iceAddress}"
  ignore_mdns = true
  full_trickle = false
}
plugins: { disable = "libjanus_voicemail.so,libjanus_echotest.so,libjanus_recordplay.so,libjanus_sip.so,libjanus_nosip.so,libjanus_textroom.so,libjanus_videocall.so,libjanus_lua.so,libjanus_duktape.so,libjanus_audiobridge.so" }
transports: { disable = "libjanus_http.so,libjanus_mqtt.so,libjanus_nanomsg.so,libjanus_pfunix.so,libjanus_rabbitmq.so" }
loggers: { disable = "libjanus_jsonlog.so" }
events: { broadcast = false }
`,
    "janus.transport.websockets.jcfg":
      `general: { json = "plain"  ws = true  ws_port = ${wsPort}  ws_ip = "127.0.0.1"  ${
        wssPort ? `wss = true  wss_port = ${wssPort}  wss_ip = "127.0.0.1"` : "wss = false"
      } }
admin: { admin_ws = false  admin_wss = false }
${wssPort ? `certificates: { cert_pem = "${dir}/tls_cert.pem"  cert_key = "${dir}/tls_key.pem" }\n` : ""}`,

    "janus.plugin.streaming.jcfg": `general: { admin_key = "${adminKey}"  rtp_port_range = "${ingest[0]}-${
      ingest[1]
    }"  events = false  string_ids = false }
`,
    "janus.plugin.videoroom.jcfg":
      `general: { admin_key = "${adminKey}"  lock_rtp_forward = true  events = false  string_ids = false }
`,
  };
  if (options.tls) {
    files["tls_cert.pem"] = options.tls.certPem;
    files["tls_key.pem"] = options.tls.keyPem;
  }
  for (const [name, text] of Object.entries(files)) await Deno.writeTextFile(`${dir}/${name}`, text);

  let child: Deno.ChildProcess | null = null;
  const spawn = async () => {
    child = new Deno.Command("janus", {
      args: ["-C", `${dir}/janus.jcfg`, "-F", dir, "-L", `${dir}/janus.log`, "-N", "-o"],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    const deadline = Date.now() + (options.readyTimeoutMs ?? 30_000);
    for (;;) {
      if (await janusAnswers(`ws://127.0.0.1:${wsPort}`, secret)) return;
      const status = await Promise.race([
        child.status,
        new Promise<null>((r) => setTimeout(() => r(null), 100)),
      ]);
      if (status || Date.now() > deadline) {
        const log = await Deno.readTextFile(`${dir}/janus.log`).catch(() => "");
        await kill();
        throw new Error(
          `Janus did not start (${status ? `exit ${status.code}` : "timeout"}):\n${log.slice(-3000)}`,
        );
      }
    }
  };
  const kill = async () => {
    const c = child;
    child = null;
    if (!c) return;
    try {
      c.kill("SIGKILL");
    } catch { /* gone */ }
    await c.status;
  };
  let stopped = false;
  await spawn().catch(async (err) => {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    throw err;
  });
  return {
    url: `ws://127.0.0.1:${wsPort}`,
    wssUrl: wssPort ? `wss://localhost:${wssPort}` : null,
    secret,
    iceAddress,
    get pid() {
      return (child as Deno.ChildProcess | null)?.pid ?? -1;
    },
    dir,
    log: () => Deno.readTextFile(`${dir}/janus.log`).catch(() => ""),
    cpuSeconds() {
      const pid = (child as Deno.ChildProcess | null)?.pid;
      return pid ? processCpuSeconds(pid) : 0;
    },
    kill,
    restart: spawn,
    async stop() {
      if (stopped) return;
      stopped = true;
      await kill();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}

/** CPU seconds (utime + stime) of a process, from /proc (0 when it is gone). */
export function processCpuSeconds(pid: number): number {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** Whether a Janus WebSocket API answers `info` at `url`. */
async function janusAnswers(url: string, secret: string): Promise<boolean> {
  let ws: WebSocket;
  try {
    ws = new WebSocket(url, "janus-protocol");
  } catch {
    return false;
  }
  try {
    return await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 2000);
      ws.onopen = () => ws.send(JSON.stringify({ janus: "info", transaction: "probe", apisecret: secret }));
      ws.onmessage = (e) => {
        clearTimeout(timer);
        resolve(String(e.data).includes("server_info"));
      };
      ws.onerror = () => {
        clearTimeout(timer);
        resolve(false);
      };
    });
  } finally {
    if (ws.readyState !== WebSocket.CLOSED) {
      const closed = new Promise((r) => ws.addEventListener("close", r, { once: true }));
      ws.close();
      await closed;
    }
  }
}

/** A running coturn. */
export interface TurnProcess {
  /** The `turn:` URL (UDP, loopback). */
  url: string;
  /** coturn's `static-auth-secret`. */
  secret: string;
  log(): Promise<string>;
  stop(): Promise<void>;
}

/**
 * Starts coturn as a TURN server on 127.0.0.1 with the REST-API secret scheme (`use-auth-secret`); retries on
 * new ports when it does not answer (a port taken meanwhile by a parallel test).
 */
export async function startTurn(
  options: { secret?: string; relayAddress?: string } = {},
): Promise<TurnProcess> {
  for (let attempt = 1;; attempt++) {
    try {
      return await startTurnOnce(options, attempt < 3 ? 15_000 : 30_000);
    } catch (err) {
      if (attempt >= 3) throw err;
    }
  }
}

async function startTurnOnce(
  options: { secret?: string; relayAddress?: string },
  readyTimeoutMs: number,
): Promise<TurnProcess> {
  const relay = options.relayAddress ?? hostAddress();
  if (!relay) throw new Error("coturn needs a non-loopback IPv4 address on this host to relay from");
  const secret = options.secret ?? crypto.randomUUID().replaceAll("-", "");
  const dir = await Deno.makeTempDir({ prefix: "coturn-" });
  const [port] = await freeUdpRange(1, ["127.0.0.1"]);
  const relayPorts = await freeUdpRange(20, [relay]);
  await Deno.writeTextFile(
    `${dir}/turnserver.conf`,
    [
      "listening-ip=127.0.0.1",
      `listening-port=${port}`,
      `relay-ip=${relay}`,
      `min-port=${relayPorts[0]}`,
      `max-port=${relayPorts[1]}`,
      "realm=svc.test",
      "use-auth-secret",
      `static-auth-secret=${secret}`,
      "fingerprint",
      "no-tls",
      "no-dtls",
      "no-tcp-relay",
      "no-cli",
      "no-multicast-peers",
      `userdb=${dir}/turndb`,
      `pidfile=${dir}/turnserver.pid`,
      `log-file=${dir}/turn.log`,
      "simple-log",
      "verbose",
      "",
    ].join("\n"),
  );
  const child = new Deno.Command("turnserver", {
    args: ["-c", `${dir}/turnserver.conf`],
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  const stop = async () => {
    try {
      child.kill("SIGKILL");
    } catch { /* gone */ }
    await child.status;
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  // Ready when it answers a STUN Binding request on its port.
  const deadline = Date.now() + readyTimeoutMs;
  for (;;) {
    if (await stunAnswers("127.0.0.1", port)) break;
    const status = await Promise.race([
      child.status,
      new Promise<null>((r) => setTimeout(() => r(null), 100)),
    ]);
    if (status || Date.now() > deadline) {
      const log = await Deno.readTextFile(`${dir}/turn.log`).catch(() => "");
      await stop();
      throw new Error(
        `coturn did not start (${status ? `exit ${status.code}` : "timeout"}):\n${log.slice(-2000)}`,
      );
    }
  }
  let stopped = false;
  return {
    url: `turn:127.0.0.1:${port}?transport=udp`,
    secret,
    log: () => Deno.readTextFile(`${dir}/turn.log`).catch(() => ""),
    async stop() {
      if (stopped) return;
      stopped = true;
      await stop();
    },
  };
}

/** Whether a STUN server answers a Binding request at `host:port` within a second. */
async function stunAnswers(host: string, port: number): Promise<boolean> {
  const s = dgram.createSocket("udp4");
  const request = new Uint8Array(20);
  const dv = new DataView(request.buffer);
  dv.setUint16(0, 0x0001); // Binding request, no attributes
  dv.setUint32(4, 0x2112a442); // magic cookie
  crypto.getRandomValues(request.subarray(8));
  try {
    return await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 1000);
      s.on("message", (msg: Uint8Array) => {
        clearTimeout(timer);
        resolve(msg.length >= 20 && msg[0] === 0x01 && msg[1] === 0x01); // Binding success
      });
      s.on("error", () => {
        clearTimeout(timer);
        resolve(false);
      });
      s.send(request, port, host);
    });
  } finally {
    await new Promise<void>((r) => s.close(() => r()));
  }
}
