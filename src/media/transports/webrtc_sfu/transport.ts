/**
 * The `webrtc_sfu` transport of one session, on Janus:
 *
 * - **Downstream**: one Streaming mountpoint per session (`session_objects.ts`: private, with a random pin
 *   and secret that never leave the worker). The encoded frames are packetized here as RTP (H.264 packetization mode 1, Opus) and
 *   sent over UDP to the mountpoint's ports; audio is paced to the media clock (sent when due, not ahead),
 *   so audio and video reach the browser in step. Janus keeps the latest keyframe (`bufferkf`) for joiners.
 * - **Video-free clients** (`?video=0` on the signalling socket): they draw the avatar themselves, so they
 *   get the sound over WebRTC and the animation track as text on the mountpoint's data channel, paced to
 *   the media clock (`animation_channel.ts`); while only such clients are attached, no video is made.
 * - **Upstream**: one VideoRoom room per session (private, random pin). A client publishes its microphone
 *   (audio only); the newest publisher's audio is forwarded (`rtp_forward`) to this worker's
 *   {@link MicReceiver}, decoded to PCM and sent to the engine.
 * - **Signalling**: each client holds a WebSocket to the worker (`src/api/transport_socket.ts`), authorized by
 *   the session's `session_token`; the worker speaks to Janus for it (see docs/media-plane.md, "WebRTC").
 *   A client counts as connected while its subscriber PeerConnection is up (Janus `webrtcup`).
 * - **Janus lost**: the session's clients are told nothing is lost yet; when Janus is back (within
 *   `SVC_SFU_RECOVERY_TIMEOUT_S`) the mountpoint and room are recreated and every client gets a new offer
 *   (and a `republish` request); otherwise the session fails with end reason `sfu_failed`.
 *
 * @module
 */
import type { Logger } from "../../../log.ts";
import { MEDIA_CLOSE } from "../../../vocabulary/close_codes.ts";
import type { VideoFormat } from "../../renderer.ts";
import type {
  AnimationMessage,
  ControlMessage,
  EncodedAudioPacket,
  EncodedVideoFrame,
  MediaTransport,
  StreamConfig,
  TransportHooks,
  TransportStats,
} from "../transport.ts";
import { type JanusConnection, JanusError, type JanusHandle, type Jsep } from "./janus.ts";
import { VISEMES } from "../../lipsync/visemes.ts";
import { dtxFrame } from "../../opus_encoder.ts";
import { AnimationChannel } from "./animation_channel.ts";
import { MicReceiver } from "./mic.ts";
import { avcCParameterSets, packetizeH264 } from "./rtp.ts";
import {
  createSfuObjects,
  destroySfuObjects,
  destroyStaleSfuObjects,
  type SfuObjects,
  type SfuObjectsSpec,
} from "./session_objects.ts";
import { type JanusSfu, sfuError } from "./sfu.ts";
import { openRtpSender, type RtpSender } from "./udp_sender.ts";

/** Audio is sent this long before it is due on the media clock (ms). */
const AUDIO_LEAD_MS = 10;
/** Told to a client once Janus took its answer. */
const STARTED_MESSAGE = JSON.stringify({ type: "started" });
/** Largest signalling message accepted from a client, bytes. */
const MAX_SIGNAL_MESSAGE = 64 * 1024;
/** Budget for destroying the session's Janus objects at the end, ms. */
const TEARDOWN_MS = 3000;

/** The socket side of a signalling client (a WebSocket in production). */
export interface SignalSocket {
  send(text: string): void;
  close(code: number, reason: string): void;
}

/** A client attached to the transport (the socket layer holds it). */
export interface SignalClient {
  /**
   * A signalling message from the client (`answer`, `publish`, `unpublish`: the text the session's
   * client-message dispatcher does not handle).
   */
  receive(text: string): void;
  /** The client's socket closed. */
  detach(): void;
}

/** What the transport needs. */
export interface WebRtcSfuDeps {
  sfu: JanusSfu;
  sessionId: string;
  format: VideoFormat;
  /** Sample rate the engine takes the user's audio at. */
  inputSampleRate: number;
  /** Signalling clients allowed at once (more: close 4429). */
  maxClients: number;
  logger: Logger;
  hooks: TransportHooks;
}

interface Client {
  socket: SignalSocket;
  /** Wants the video (false: a video-free client, which gets the animation track instead). */
  video: boolean;
  /** The `hello` was sent (a video-free client's waits for the stream's configuration: it names the art). */
  greeted: boolean;
  viewer: JanusHandle | null;
  /** The subscriber's PeerConnection is up. */
  up: boolean;
  publisher: { handle: JanusHandle; publisherId: number; mid: string; forward: number | null } | null;
  /** The client asked to publish its microphone (asked again after a Janus restart). */
  wantsMic: boolean;
  /** Signalling steps run one after the other. */
  ops: Promise<void>;
  gone: boolean;
}

/** WebRTC through Janus. */
export class WebRtcSfuTransport implements MediaTransport {
  readonly kind = "webrtc_sfu";
  readonly #d: WebRtcSfuDeps;
  readonly #sender: RtpSender;
  readonly #mic: MicReceiver;
  readonly #clients = new Set<Client>();
  #objects: SfuObjects | null = null;
  #previous: SfuObjects | null = null;
  #unsubscribe: () => void = () => {};
  #config: StreamConfig | null = null;
  #parameterSets: Uint8Array[] = [];
  #audioQueue: { due: number; packet: EncodedAudioPacket }[] = [];
  #audioTimer: ReturnType<typeof setTimeout> | undefined;
  #recoveryTimer: ReturnType<typeof setTimeout> | undefined;
  #micOwner: Client | null = null;
  #upCount = 0;
  /** The animation track on its way to the data channel (once the stream is configured). */
  #animation: AnimationChannel | null = null;
  #closed = false;
  #bytesSent = 0;
  /** Recent times from a frame made (or a sound due) to its RTP sent, ms (for the players' figures). */
  readonly #sendLag = { video: [] as number[], audio: [] as number[] };

  private constructor(deps: WebRtcSfuDeps, sender: RtpSender, mic: MicReceiver) {
    this.#d = deps;
    this.#sender = sender;
    this.#mic = mic;
  }

  /**
   * Sets the session up on Janus (mountpoint, room) and opens the RTP sockets. Throws
   * `SVC_SFU_CONNECTION_FAILED` (503), `SVC_SFU_ROOM_FULL` (503) or `SVC_SFU_NEGOTIATION_FAILED` (502);
   * nothing is left behind then.
   */
  static async open(deps: WebRtcSfuDeps): Promise<WebRtcSfuTransport> {
    const { config } = deps.sfu;
    const connection = await deps.sfu.connection();
    // Bound before anything is sent, sending in order: the opening keyframe must reach Janus as it was cut
    // (see udp_sender.ts).
    let sender: RtpSender;
    try {
      sender = await openRtpSender(config.rtpHost);
    } catch (err) {
      throw sfuError(err);
    }
    let mic: MicReceiver | null = null;
    try {
      // The microphone goes to the engine only while someone holds it (see #forward).
      let t: WebRtcSfuTransport | null = null;
      mic = await MicReceiver.open(config.workerRtpHost, deps.inputSampleRate, (pcm) => t?.upstream(pcm));
      t = new WebRtcSfuTransport(deps, sender, mic);
      t.#objects = await createSfuObjects(connection, t.#objectsSpec());
      t.#unsubscribe = deps.sfu.subscribe({ lost: () => t!.#lost(), restored: (c) => t!.#restored(c) });
      return t;
    } catch (err) {
      await mic?.close();
      await new Promise<void>((r) => sender.close(() => r()));
      throw sfuError(err);
    }
  }

  get clients(): number {
    return this.#upCount;
  }

  /**
   * The mountpoint is the video's consumer: Janus keeps the latest keyframe for viewers that join, so the
   * video runs while no client is attached (the first one is shown a frame at once) and while a video
   * client is; only while every attached client is video-free does no video run.
   */
  get videoClients(): number {
    let attached = 0, video = 0;
    for (const c of this.#clients) {
      if (c.gone) continue;
      attached++;
      if (c.video) video++;
    }
    return attached === 0 ? 1 : video;
  }

  get animationClients(): number {
    let n = 0;
    for (const c of this.#clients) if (!c.gone && !c.video) n++;
    return n;
  }

  animation(message: AnimationMessage): void {
    if (this.#closed || !this.#animation || this.animationClients === 0) return;
    this.#animation.push(message);
  }

  videoStopped(): void {}

  #objectsSpec(): SfuObjectsSpec {
    const { sfu, format, sessionId, maxClients } = this.#d;
    return { sfu, format, sessionId, publishers: maxClients };
  }

  // ---- downstream ----

  configure(config: StreamConfig): void {
    this.#config = config;
    this.#parameterSets = avcCParameterSets(config.avcC);
    this.#animation ??= new AnimationChannel({
      send: (text) => {
        const o = this.#objects;
        if (o) this.#send(new TextEncoder().encode(text), o.mountpoint.dataPort);
      },
      timelineMs: () => this.#config?.timelineMs() ?? 0,
      leadMs: AUDIO_LEAD_MS,
    });
    for (const c of this.#clients) if (!c.greeted) this.#greet(c);
  }

  video(frame: EncodedVideoFrame): void {
    const o = this.#objects;
    if (this.#closed || !o) return;
    const packets = packetizeH264(o.video, frame.data, frame.pts, frame.key ? this.#parameterSets : []);
    for (const p of packets) this.#send(p, o.mountpoint.videoPort);
    if (this.#config) this.#lag("video", this.#config.timelineMs() - frame.pts / 90);
  }

  #lag(kind: "video" | "audio", ms: number): void {
    const xs = this.#sendLag[kind];
    xs.push(ms);
    if (xs.length > 50) xs.shift();
  }

  /** Median times from made (video) or due (audio) to sent, ms (null before anything was sent). */
  sendLag(): { video: number | null; audio: number | null } {
    const med = (xs: number[]) =>
      xs.length ? Math.round([...xs].sort((a, b) => a - b)[xs.length >> 1] * 10) / 10 : null;
    return { video: med(this.#sendLag.video), audio: med(this.#sendLag.audio) };
  }

  /** A `clock_sync` answer carries the send lags (a WebRTC player cannot see them). */
  clockSyncExtras(): Record<string, unknown> {
    return { send_ms: this.sendLag() };
  }

  audio(packet: EncodedAudioPacket): void {
    if (this.#closed || !this.#config) return;
    const due = (packet.pts - this.#config.opus.preSkip) / 48;
    this.#audioQueue.push({ due, packet });
    this.#paceAudio();
  }

  audioUnsentFrom(): number {
    return this.#closed || !this.#config || !this.#audioQueue.length
      ? Infinity
      : this.#audioQueue[0].packet.pts;
  }

  retractAudio(pts: number): void {
    const q = this.#audioQueue;
    let n = q.length;
    while (n > 0 && q[n - 1].packet.pts >= pts) n--;
    q.length = n;
  }

  /** Sends the audio that is due (paced to the media clock) and wakes up for the next packet. */
  #paceAudio = (): void => {
    clearTimeout(this.#audioTimer);
    this.#audioTimer = undefined;
    if (this.#closed || !this.#config) return;
    const now = this.#config.timelineMs();
    const o = this.#objects;
    while (this.#audioQueue.length && this.#audioQueue[0].due <= now + AUDIO_LEAD_MS) {
      const { packet, due } = this.#audioQueue.shift()!;
      // Silence the encoder repeats goes as DTX frames (see dtxFrame): NetEQ does not stretch time over them.
      const data = packet.repeat ? dtxFrame(packet.data) : packet.data;
      if (o) this.#send(o.audio.packet(packet.pts, false, data), o.mountpoint.audioPort);
      this.#lag("audio", now - due);
    }
    if (this.#audioQueue.length) {
      const wait = Math.max(1, Math.ceil(this.#audioQueue[0].due - AUDIO_LEAD_MS - now));
      this.#audioTimer = setTimeout(this.#paceAudio, wait);
    }
  };

  #send(packet: Uint8Array, port: number): void {
    this.#bytesSent += packet.length;
    try {
      this.#sender.send(packet, port, this.#d.sfu.config.rtpHost);
    } catch { /* the socket is closing */ }
  }

  control(message: ControlMessage): number {
    if (this.#closed) return 0;
    if (message.type === "interrupt" && typeof message.t_ms === "number") {
      this.#animation?.interrupt(message.t_ms);
    }
    const text = JSON.stringify(message);
    let sent = 0;
    for (const c of this.#clients) {
      if (c.gone) continue;
      this.#tell(c, text);
      sent++;
    }
    return sent;
  }

  // ---- clients ----

  /**
   * Attaches a signalling client: it gets a `hello` and the subscriber offer. Returns null when it was
   * refused (closed with 4429: too many clients).
   */
  attach(socket: SignalSocket, options: { video?: boolean } = {}): SignalClient | null {
    if (this.#closed) return null;
    if (this.#clients.size >= this.#d.maxClients) {
      socket.close(MEDIA_CLOSE.TOO_MANY_CLIENTS.code, MEDIA_CLOSE.TOO_MANY_CLIENTS.reason);
      return null;
    }
    const client: Client = {
      socket,
      video: options.video ?? true,
      greeted: false,
      viewer: null,
      up: false,
      publisher: null,
      wantsMic: false,
      ops: Promise.resolve(),
      gone: false,
    };
    this.#clients.add(client);
    if (client.video || this.#config) this.#greet(client);
    this.#run(client, () => this.#subscribe(client));
    return {
      receive: (text) => this.#onSignal(client, text),
      detach: () => this.#detach(client),
    };
  }

  /**
   * The client's `hello`. A video-free client's names the art to draw (as on the media WebSocket) and is
   * followed by the latest face and head, so it draws the current state before the next change.
   */
  #greet(client: Client): void {
    client.greeted = true;
    const { width, height, fps } = this.#d.format;
    const config = this.#config;
    const avatar = config?.avatar;
    this.#tell(
      client,
      JSON.stringify({
        type: "hello",
        session_id: this.#d.sessionId,
        transport: "webrtc_sfu",
        video: client.video ? { width, height, fps } : null,
        ...(config ? { timeline_ms: Math.round(config.timelineMs() * 10) / 10 } : {}),
        ...(!client.video && avatar
          ? {
            animation: {
              avatar_id: avatar.avatarId,
              bg_id: avatar.bgId,
              art_path: `/media/v0/art/${avatar.avatarId}`,
              // The document itself when it is small (a stock avatar's): no request before the first picture.
              ...(avatar.art ? { art: avatar.art } : {}),
              seed: avatar.seed,
              visemes: VISEMES,
              channel: "data",
            },
          }
          : {}),
      }),
    );
    if (!client.video) {
      for (const m of this.#animation?.latest() ?? []) {
        if (m.type !== "viseme") this.#tell(client, JSON.stringify(m));
      }
    }
  }

  #tell(client: Client, text: string): void {
    if (client.gone) return;
    try {
      client.socket.send(text);
    } catch { /* closing */ }
  }

  /** Runs a signalling step for a client after its previous ones. */
  #run(client: Client, step: () => Promise<void>): void {
    client.ops = client.ops.then(async () => {
      if (client.gone || this.#closed) return;
      try {
        await step();
      } catch (err) {
        if (client.gone || this.#closed || !this.#objects) return; // Janus went away: recovery redoes it
        this.#d.logger.warn("sfu signalling step failed", {
          session_id: this.#d.sessionId,
          error: err instanceof JanusError ? `janus ${err.code}` : String(err).slice(0, 120),
        });
        this.#tell(
          client,
          JSON.stringify({
            type: "error",
            code: "SVC_SFU_NEGOTIATION_FAILED",
            message: "Media negotiation failed.",
          }),
        );
      }
    });
  }

  #onSignal(client: Client, text: string): void {
    if (client.gone || this.#closed) return;
    if (text.length > MAX_SIGNAL_MESSAGE) {
      this.#detach(client);
      client.socket.close(1009, "message_too_big");
      return;
    }
    let msg: { type?: unknown; sdp?: unknown };
    try {
      msg = JSON.parse(text);
    } catch {
      return; // not JSON: ignored, like unknown types
    }
    const sdp = typeof msg?.sdp === "string" ? msg.sdp : null;
    switch (msg?.type) {
      case "answer":
        if (sdp) this.#run(client, () => this.#start(client, { type: "answer", sdp }));
        break;
      case "publish":
        if (sdp) {
          client.wantsMic = true;
          this.#run(client, () => this.#publish(client, { type: "offer", sdp }));
        }
        break;
      case "unpublish":
        client.wantsMic = false;
        this.#run(client, () => this.#unpublish(client));
        break;
    }
  }

  /** Watches the mountpoint for the client and sends it Janus's offer. */
  async #subscribe(client: Client): Promise<void> {
    const o = this.#objects;
    if (!o) return; // Janus is away: #restored subscribes every client
    const viewer = await o.session.attach("janus.plugin.streaming");
    if (client.gone || this.#objects !== o) {
      await viewer.detach();
      return;
    }
    client.viewer = viewer;
    viewer.onEvent((m) => {
      if (client.viewer !== viewer) return;
      if (m.janus === "webrtcup") this.#setUp(client, true);
      else if (m.janus === "hangup" || m.janus === "detached") this.#setUp(client, false);
    });
    // A video client is offered the video and the sound; a video-free one the sound and the data channel.
    const { jsep } = await viewer.message({
      request: "watch",
      id: o.mountpoint.id,
      pin: o.mountpoint.pin,
      media: client.video ? ["v", "a"] : ["a", "d"],
    });
    if (!jsep) throw new JanusError(0, "no offer for the subscriber");
    this.#tell(client, JSON.stringify({ type: "offer", sdp: jsep.sdp }));
  }

  /**
   * Gives the client's answer to Janus and tells the client once Janus has it (`started`): the SDK player
   * applies its answer only then, so its browser's first connectivity check finds Janus ready for it.
   */
  async #start(client: Client, answer: Jsep): Promise<void> {
    if (!client.viewer) return;
    await client.viewer.message({ request: "start" }, answer);
    this.#tell(client, STARTED_MESSAGE);
  }

  /** Publishes the client's microphone in the room and forwards it to this worker (newest client wins). */
  async #publish(client: Client, offer: Jsep): Promise<void> {
    const o = this.#objects;
    if (!o) return;
    await this.#unpublish(client);
    const handle = await o.session.attach("janus.plugin.videoroom");
    if (client.gone || this.#objects !== o) {
      await handle.detach();
      return;
    }
    const joined = await handle.message({
      request: "join",
      ptype: "publisher",
      room: o.room.id,
      pin: o.room.pin,
      display: "microphone",
    });
    const publisherId = Number(joined.data.id);
    const mid = audioMid(offer.sdp) ?? "0";
    client.publisher = { handle, publisherId, mid, forward: null };
    const { jsep } = await handle.message(
      { request: "publish", audio: true, video: false, data: false },
      offer,
    );
    if (!jsep) throw new JanusError(0, "no answer for the publisher");
    this.#tell(client, JSON.stringify({ type: "answer", sdp: jsep.sdp }));
    await this.#forward(client);
  }

  /** Makes `client` the microphone owner: its audio is forwarded here, the previous owner's is not. */
  async #forward(client: Client): Promise<void> {
    const o = this.#objects;
    const pub = client.publisher;
    if (!o || !pub) return;
    const previous = this.#micOwner;
    this.#micOwner = client;
    if (previous && previous !== client) await this.#stopForward(previous);
    const { sfu } = this.#d;
    const host = sfu.config.workerRtpHost;
    const res = await o.videoroom.request({
      request: "rtp_forward",
      admin_key: sfu.secret,
      secret: o.room.secret,
      room: o.room.id,
      publisher_id: pub.publisherId,
      host,
      host_family: host.includes(":") ? "ipv6" : "ipv4",
      streams: [{ mid: pub.mid, port: this.#mic.port }],
    });
    const forwarders = (res.forwarders as { stream_id?: number }[] | undefined) ?? [];
    pub.forward = forwarders[0]?.stream_id ?? null;
  }

  async #stopForward(client: Client): Promise<void> {
    const o = this.#objects;
    const pub = client.publisher;
    if (!o || !pub || pub.forward === null) return;
    const streamId = pub.forward;
    pub.forward = null;
    await o.videoroom.request({
      request: "stop_rtp_forward",
      admin_key: this.#d.sfu.secret,
      secret: o.room.secret,
      room: o.room.id,
      publisher_id: pub.publisherId,
      stream_id: streamId,
    }).catch(() => {});
  }

  async #unpublish(client: Client): Promise<void> {
    const pub = client.publisher;
    if (!pub) return;
    await this.#stopForward(client);
    client.publisher = null;
    if (this.#micOwner === client) this.#micOwner = null;
    await pub.handle.detach();
  }

  /** Microphone PCM from the receiver: to the engine while a client holds the microphone. */
  private upstream(pcm: Uint8Array): void {
    if (this.#closed || !this.#micOwner) return;
    this.#d.hooks.upstream(pcm);
  }

  #setUp(client: Client, up: boolean): void {
    if (client.up === up) return;
    client.up = up;
    this.#upCount += up ? 1 : -1;
    this.#d.hooks.clientsChanged(this.#upCount);
  }

  #detach(client: Client): void {
    if (client.gone) return;
    client.gone = true;
    this.#clients.delete(client);
    this.#setUp(client, false);
    const viewer = client.viewer;
    client.viewer = null;
    void (async () => {
      await client.ops.catch(() => {});
      if (this.#micOwner === client) this.#micOwner = null;
      await this.#stopForward(client);
      await client.publisher?.handle.detach();
      client.publisher = null;
      await viewer?.detach();
    })();
  }

  // ---- Janus lost and back ----

  #lost(): void {
    if (this.#closed) return;
    this.#previous = this.#objects ?? this.#previous;
    this.#objects = null;
    for (const c of this.#clients) {
      c.viewer = null;
      c.publisher = null;
      this.#setUp(c, false);
    }
    this.#micOwner = null;
    this.#d.logger.warn("sfu lost: waiting for it to come back", { session_id: this.#d.sessionId });
    this.#recoveryTimer ??= setTimeout(() => {
      this.#recoveryTimer = undefined;
      if (this.#closed || this.#objects) return;
      this.#d.hooks.fail({
        reason: "sfu_unreachable",
        endReason: "sfu_failed",
        warning: "The media server became unreachable.",
      });
    }, this.#d.sfu.config.recoveryTimeoutMs);
  }

  async #restored(connection: JanusConnection): Promise<void> {
    if (this.#closed || this.#objects) return;
    let objects: SfuObjects;
    try {
      const previous = this.#previous;
      this.#previous = null;
      if (previous) await destroyStaleSfuObjects(connection, previous);
      objects = await createSfuObjects(connection, this.#objectsSpec());
    } catch (err) {
      if (!connection.open) return; // lost again: the next recovery tries again
      clearTimeout(this.#recoveryTimer);
      this.#recoveryTimer = undefined;
      this.#d.logger.error("sfu objects could not be recreated", {
        session_id: this.#d.sessionId,
        error: sfuError(err).code,
      });
      this.#d.hooks.fail({
        reason: "sfu_setup_failed",
        endReason: "sfu_failed",
        warning: "The media server could not be set up again.",
      });
      return;
    }
    if (this.#closed) {
      await destroySfuObjects(objects);
      return;
    }
    clearTimeout(this.#recoveryTimer);
    this.#recoveryTimer = undefined;
    this.#objects = objects;
    this.#d.logger.info("sfu objects recreated", { session_id: this.#d.sessionId });
    for (const c of this.#clients) {
      this.#run(c, () => this.#subscribe(c));
      if (c.wantsMic) this.#tell(c, JSON.stringify({ type: "republish" }));
    }
  }

  // ---- end ----

  async close(failed: string | null): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#audioTimer);
    clearTimeout(this.#recoveryTimer);
    this.#audioQueue = [];
    this.#animation?.close();
    this.#unsubscribe();
    const ended = JSON.stringify({ type: "ended", reason: failed ?? "session_ended" });
    const close = failed ? MEDIA_CLOSE.MEDIA_FAILED : MEDIA_CLOSE.SESSION_ENDED;
    for (const c of [...this.#clients]) {
      this.#tell(c, ended);
      this.#detach(c);
      try {
        c.socket.close(close.code, close.reason);
      } catch { /* closed already */ }
    }
    const o = this.#objects;
    this.#objects = null;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      o ? destroySfuObjects(o) : Promise.resolve(),
      new Promise<void>((r) => timer = setTimeout(r, TEARDOWN_MS)),
    ]);
    clearTimeout(timer);
    await this.#mic.close();
    await new Promise<void>((r) => {
      try {
        this.#sender.close(() => r());
      } catch {
        r();
      }
    });
  }

  stats(): TransportStats {
    return { bytesSent: this.#bytesSent, slowClientsClosed: 0 };
  }
}

/** The `mid` of the first audio section of an SDP (the browser's microphone track). */
export function audioMid(sdp: string): string | null {
  const sections = sdp.split(/\r?\nm=/);
  for (const s of sections) {
    if (!s.startsWith("audio") && !s.startsWith("m=audio")) continue;
    const m = /\r?\na=mid:([^\r\n]+)/.exec(s);
    if (m) return m[1].trim();
  }
  return null;
}
