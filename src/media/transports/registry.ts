/**
 * The worker side's half of the transport registry (the other half, what every floor knows of a
 * transport, is `src/vocabulary/transports.ts`): for each transport, the media server it needs (if any),
 * how a session's transport is opened, whether it paces its own sending, the session's `stream_metadata` endpoints, and how a client socket
 * is attached to a running session's transport. The media plane (`../media_plane.ts`) reads only this
 * table: it names no transport.
 *
 * @module
 */
import { TOKEN_TTL_MS } from "../../auth/tokens.ts";
import type { Clock } from "../../clock.ts";
import type { SfuConfig } from "../../config.ts";
import type { Logger } from "../../log.ts";
import type { StreamEndpoints } from "../../vocabulary/schemas.ts";
import {
  type AttachedClient,
  emptyEndpoints,
  FRAMES_SUBPROTOCOL,
  type SocketPeer,
  socketUrl,
  type TransportKind,
} from "../../vocabulary/transports.ts";
import type { ClientMessages } from "../client_messages.ts";
import type { VideoFormat } from "../renderer.ts";
import type { MediaTransport, TransportFactory } from "./transport.ts";
import { JanusSfu } from "./webrtc_sfu/sfu.ts";
import { WebRtcSfuTransport } from "./webrtc_sfu/transport.ts";
import { iceServersFor } from "./webrtc_sfu/turn.ts";
import type { FanoutLimits, MediaClient } from "./ws_fmp4/fanout.ts";
import { WsFmp4Transport } from "./ws_fmp4/transport.ts";

/**
 * The transports' own settings, under the names the service's `Config` gives them (the composition root
 * passes the whole configuration): a transport with settings adds its field here and in `config.ts`.
 */
export interface TransportConfig {
  /** The SFU of the `webrtc_sfu` transport (none: not served). */
  sfu?: SfuConfig | null;
}

/** The media plane's settings a transport reads. */
export interface TransportSettings {
  transports?: TransportConfig;
  /** CA certificates (PEM) trusted for a `wss://` Janus beside the default roots (`SVC_SFU_CA_FILE`, read at start-up). */
  sfuCaCerts?: readonly string[];
  logger: Logger;
}

/** A media server a transport keeps a connection to for the process's life. */
export interface MediaServer {
  close(): Promise<void>;
}

/** What opening a session's transport is given. */
export interface OpenRequest<S> {
  /** The transport's media server (null for a transport that needs none). */
  server: S;
  sessionId: string;
  /** The renderer's output format. */
  format: VideoFormat;
  /** Sample rate the engine takes the user's audio at. */
  inputSampleRate: number;
  limits: FanoutLimits;
  logger: Logger;
}

/** What a session's endpoints are built from. */
export interface EndpointRequest<S> {
  server: S;
  sessionId: string;
  /** The service's public origin now. */
  publicUrl: string;
  options: TransportSettings;
  clock: Clock;
}

/** The worker side of one transport. */
export interface TransportImplementation<S extends MediaServer | null = MediaServer | null> {
  /**
   * Whether the transport sends the session's audio paced to the media clock (the SFU's RTP leaves when it
   * is due), rather than as soon as it is encoded. The audio playout then writes silence a little ahead
   * while a response is still speaking, a clock tick tops silence up to last until the next frame, and a
   * response's first speech takes the place of the silence the transport still holds unsent (its
   * `audioUnsentFrom` / `retractAudio`; `../session/audio_playout.ts`).
   */
  readonly paced: boolean;
  /**
   * The media server this transport needs, from the plane's options; null when it is not configured (the
   * transport is then not served here). Absent: it needs none, and every media plane serves it.
   */
  connect?(options: TransportSettings): S;
  /** The factory of a session's transport (the session media calls it with its hooks). */
  open(request: OpenRequest<S>): TransportFactory;
  /** The session's `stream_metadata` endpoints (fresh TURN credentials where the transport has them). */
  endpoints(request: EndpointRequest<S>): Promise<StreamEndpoints>;
  /**
   * Attaches a client socket to `transport` when it is one of this kind (null otherwise); the function
   * returns null when the transport refuses the client (it closed the socket then).
   */
  attach(
    transport: MediaTransport | null,
    messages: ClientMessages,
  ): ((peer: SocketPeer) => AttachedClient | null) | null;
}

const websocketFmp4: TransportImplementation<null> = {
  paced: false,
  open: (r) => (hooks) => Promise.resolve(new WsFmp4Transport(r.sessionId, r.limits, hooks)),
  endpoints: (r) =>
    Promise.resolve({
      ...emptyEndpoints(),
      media_url: socketUrl("websocket_fmp4", r.publicUrl, r.sessionId),
    }),
  attach: (transport, messages) => {
    if (!(transport instanceof WsFmp4Transport)) return null;
    return (peer) => {
      // `video=0`: a video-free client (audio and the animation track; docs/media-plane.md).
      const video = peer.query("video") !== "0";
      // The lighter framing when the client asks for it (docs/media-plane.md), else fMP4; a video-free
      // client's audio always comes in the lighter framing.
      const client: MediaClient = {
        framing: peer.protocol === FRAMES_SUBPROTOCOL || !video ? "frames" : "fmp4",
        video,
        send: (data) => peer.send(data),
        get bufferedAmount() {
          return peer.bufferedAmount;
        },
        close: (code, reason) => peer.close(code, reason),
      };
      const attached = transport.attach(client);
      if (!attached) return null;
      const sender = { reply: client.send };
      return {
        // Binary frames are the microphone; text frames the client's messages (`tool_result`,
        // `player_stats`, `clock_sync`), by type, to the session's one dispatcher; unknown ones are ignored.
        receive: (data) =>
          typeof data === "string" ? messages.dispatch(data, sender) : attached.receive(data),
        detach: () => attached.detach(),
      };
    };
  },
};

const webrtcSfu: TransportImplementation<JanusSfu | null> = {
  paced: true,
  connect: (options) => {
    const sfu = options.transports?.sfu;
    return sfu?.adminSecret ? new JanusSfu(sfu, options.logger, { caCerts: options.sfuCaCerts }) : null;
  },
  open: (r) => (hooks) =>
    WebRtcSfuTransport.open({
      sfu: r.server!,
      sessionId: r.sessionId,
      format: r.format,
      inputSampleRate: r.inputSampleRate,
      maxClients: r.limits.maxClients,
      logger: r.logger,
      hooks,
    }),
  endpoints: async (r) => ({
    media_url: null,
    sfu_endpoint: socketUrl("webrtc_sfu", r.options.transports?.sfu?.publicUrl ?? r.publicUrl, r.sessionId),
    ice_servers: await iceServersFor(r.server!.config, r.sessionId, r.clock.now() + TOKEN_TTL_MS),
  }),
  attach: (transport, messages) => {
    if (!(transport instanceof WebRtcSfuTransport)) return null;
    return (peer) => {
      // `video=0`: a video-free client (the sound over WebRTC, the animation track on the data channel).
      const attached = transport.attach(peer, { video: peer.query("video") !== "0" });
      if (!attached) return null;
      const sender = { reply: (text: string) => peer.send(text) };
      return {
        // The session's client messages (`tool_result`, `player_stats`, `clock_sync`) by type, to the
        // session's one dispatcher; the rest is signalling.
        receive: (data) => {
          if (typeof data === "string" && messages.dispatch(data, sender) !== "handled") {
            attached.receive(data);
          }
        },
        detach: () => attached.detach(),
      };
    };
  },
};

/** The worker side of every transport (one entry per name of the vocabulary's registry). */
export const TRANSPORT_IMPLEMENTATIONS: { [K in TransportKind]: TransportImplementation } = {
  websocket_fmp4: websocketFmp4 as TransportImplementation,
  webrtc_sfu: webrtcSfu as TransportImplementation,
};
