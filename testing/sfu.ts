/**
 * SFU test context: a real Janus (and, on request, a real coturn) started for the test, a media plane with
 * the `webrtc_sfu` transport configured against it, a harness serving the app on loopback, and a fake
 * engine the test drives. Everything is stopped in `finally`, whatever happens.
 *
 * @module
 */
import { generateEngineTls } from "../engine/tls.ts";
import { sfuTrust } from "../src/app/outbound.ts";
import { loadConfig, type SfuConfig } from "../src/config.ts";
import { createLogger } from "../src/log.ts";
import { MediaPlane } from "../src/media/media_plane.ts";
import type { AvatarSessionMedia } from "../src/media/session_media.ts";
import { FakeBridge } from "./fake_bridge.ts";
import { engineBody } from "./fixtures.ts";
import { createHarness, type Harness } from "./harness.ts";
import { type JanusProcess, startJanus, startTurn, type TurnProcess } from "./janus.ts";
import { startUdpProxy, type UdpProxy, type UdpProxyOptions } from "./udp_proxy.ts";
import { smallRenderer } from "./media.ts";
import type { Renderer } from "../src/media/renderer.ts";

/** An SFU test context. */
export interface SfuContext {
  h: Harness;
  plane: MediaPlane;
  janus: JanusProcess;
  turn: TurnProcess | null;
  /** The impairment proxy in front of coturn (with the `impair` option): every relayed packet crosses it. */
  proxy: UdpProxy | null;
  fake: FakeBridge;
  /** Base http URL of the served app (also the plane's public URL). */
  base: string;
  key: string;
  /** Service logs. */
  logs: string[];
  /** Creates a session (transport `webrtc_sfu` unless `extra` says otherwise); returns the answer. */
  // deno-lint-ignore no-explicit-any
  create(extra?: Record<string, unknown>): Promise<any>;
  /** `POST /v1/sessions` as {@link create} does, returning the response whatever its status. */
  post(extra?: Record<string, unknown>): ReturnType<Harness["req"]>;
  /** The running media of a session. */
  media(sessionId: string): AvatarSessionMedia;
}

/** Options of {@link withSfu}. */
export interface SfuOptions {
  /** Start coturn and hand out TURN credentials. */
  turn?: boolean;
  /**
   * Put a UDP impairment proxy (`udp_proxy.ts`) in front of coturn and hand out its address as the TURN
   * URL (implies `turn`); a page forced to relay then reaches Janus only through it.
   */
  impair?: Omit<UdpProxyOptions, "upstream">;
  /** Environment overrides of the harness. */
  env?: Record<string, string>;
  /** SFU settings overriding the ones derived from the fixtures. */
  sfu?: Partial<SfuConfig>;
  /** Janus fixture options. */
  janus?: Parameters<typeof startJanus>[0];
  /** Run the lifecycle machinery (lifetimes, leases) as a service does. */
  lifecycle?: boolean;
  /** A renderer instead of the small reference one (256×256). */
  renderer?: Renderer;
  /** Frames between keyframes (default one second's). */
  gopFrames?: number;
  /**
   * Reach Janus over TLS (`wss://`, a certificate of a private CA): `"trusted"` names the CA in
   * `SVC_SFU_CA_FILE`, `"untrusted"` does not.
   */
  wss?: "trusted" | "untrusted";
}

/** Runs `fn` with Janus, an SFU-enabled media plane and a served harness; stops everything afterwards. */
export async function withSfu(
  fn: (ctx: SfuContext) => Promise<void>,
  options: SfuOptions = {},
): Promise<void> {
  const tls = options.wss ? await generateEngineTls() : null;
  const janus = await startJanus({ ...options.janus, ...(tls ? { tls } : {}) });
  const caFile = tls && options.wss === "trusted" ? `${janus.dir}/ca.pem` : null;
  if (caFile) await Deno.writeTextFile(caFile, tls!.caPem);
  let turn: TurnProcess | null = null;
  let proxy: UdpProxy | null = null;
  let plane: MediaPlane | null = null;
  let h: Harness | null = null;
  const logs: string[] = [];
  try {
    if (options.turn || options.impair) turn = await startTurn();
    if (turn && options.impair) {
      const port = Number(/:(\d+)\?/.exec(turn.url)![1]);
      proxy = await startUdpProxy({ ...options.impair, upstream: { host: "127.0.0.1", port } });
    }
    const turnUrl = proxy ? `turn:${proxy.host}:${proxy.port}?transport=udp` : turn?.url;
    const env = {
      SVC_SFU_JANUS_URL: tls ? janus.wssUrl! : janus.url,
      SVC_SFU_ADMIN_SECRET: janus.secret,
      ...(caFile ? { SVC_SFU_CA_FILE: caFile } : {}),
      ...(turn ? { SVC_TURN_URLS: turnUrl!, SVC_TURN_SECRET: turn.secret } : {}),
    };
    const config = loadConfig(env);
    plane = await MediaPlane.create({
      config: { ...config.media, width: 256, height: 256 },
      transports: { sfu: { ...config.sfu!, ...options.sfu } },
      sfuCaCerts: await sfuTrust(config),
      publicUrl: "http://localhost:8787",
      logger: createLogger({ level: "debug", sink: (l) => logs.push(l) }),
      renderer: options.renderer ?? await smallRenderer(),
      gopFrames: options.gopFrames,
    });
    const fake = new FakeBridge();
    h = await createHarness({
      mediaPlane: plane,
      bridges: { external_engine: fake },
      env: options.env,
      lifecycle: options.lifecycle,
    });
    const base = h.serve();
    plane.setPublicUrl(base);
    const key = await h.key("proj_sfu");
    const harness = h;
    const p = plane;
    const post = (extra: Record<string, unknown> = {}) =>
      harness.req("POST", "/v1/sessions", {
        key,
        body: engineBody("wss://engine.test/v0", { transport: "webrtc_sfu", ...extra }),
      });
    await fn({
      h: harness,
      plane: p,
      janus,
      turn,
      proxy,
      fake,
      base,
      key,
      logs,
      post,
      async create(extra = {}) {
        const res = await post(extra);
        if (res.status !== 200) throw new Error(`create answered ${res.status} ${res.text}`);
        return res.body;
      },
      media(sessionId) {
        const live = p.get(sessionId);
        if (!live) throw new Error(`no media for ${sessionId}`);
        return live.media;
      },
    });
  } finally {
    await h?.close().catch(() => {});
    await plane?.close().catch(() => {});
    await proxy?.close();
    await turn?.stop();
    await janus.stop();
  }
}
