// @ts-check
// @ts-self-types="./player.d.ts"
/**
 * The browser player of the avatar session service's media plane: `websocket_fmp4` here, `webrtc_sfu` in
 * `./player_webrtc.js`, chosen by the transport `streamMetadata.transport` names, through one registry
 * ({@link PLAYERS}: a transport's player is one entry): the caller does not care which transport it got.
 *
 * It connects to a session's media WebSocket with the session's client token, plays the stream (H.264 +
 * Opus) in a `<video>` — decoded with WebCodecs and timed by its audio (`./player_webcodecs.js`), or
 * through Media Source Extensions where WebCodecs is missing —, streams the microphone to the
 * conversation engine, reports its state, time to first frame and what it measured (to the app in
 * `stats()`, to the service over its socket), and asks the app for a fresh token when it has to
 * reconnect. It holds no API key: the app's backend creates the session and hands the browser only
 * `client_token` and `stream_metadata.media_url`.
 *
 * No build step: load it as an ES module.
 *
 * ```js ignore
 * // In a page: the service serves this file at /sdk/player.js; npm and Deno users import
 * // "@avatar-svc/sdk/player". Your backend creates the session and hands over
 * // { session_id, client_token, media_url } (see sdk/README.md for a backend that does).
 * import { createPlayer } from "/sdk/player.js";
 * const handoff = async (path) => (await fetch(path, { method: "POST" })).json();
 * const session = await handoff("/avatar-session");
 * const player = createPlayer({
 *   video: document.querySelector("video"),
 *   mediaUrl: session.media_url,
 *   clientToken: session.client_token,
 *   refreshToken: async () => {
 *     const t = await handoff(`/avatar-session/${encodeURIComponent(session.session_id)}/token`);
 *     return { clientToken: t.client_token, mediaUrl: t.media_url };
 *   },
 *   onState: (s) => console.log(s.state, s.ttffMs),
 * });
 * // later: player.close();
 * ```
 *
 * Protocol: docs/media-plane.md.
 *
 * @module
 */

/** Subprotocol of the media WebSocket. */
export const MEDIA_SUBPROTOCOL = "avatar-media.v0";

/**
 * Video-free: how long after a `requestAnimationFrame` callback its canvas drawing is on screen (one refresh
 * at 60 Hz; an estimate, not measured per page as the video path's display delay is).
 */
const CANVAS_DISPLAY_MS = 16;
/**
 * Video-free: how long a stamp of the animation track that arrived may wait for the animation frame that draws
 * with it (one refresh at 60 Hz), on top of the draw-ahead: what the anchor adds to the stamps' lateness.
 */
const ANIMATION_FRAME_WAIT_MS = 17;
/** Media Source Extensions: the playback rate while catching up with the latency target (pitch kept). */
const CATCH_UP_RATE = 1.08;

/** Close codes after which the player does not reconnect. */
const FINAL_CLOSES = new Set([1000, 1003, 1011, 4403, 4404, 4429]);

import { createWebRtcPlayer } from "./player_webrtc.js";
import { createToolCalls } from "./tool_calls.js";
import { createWebCodecsSink, webCodecsSupported } from "./player_webcodecs.js";
import { createAvatarDrawer } from "./avatar_canvas.js";
import { createClockSync, startReporting } from "./player_report.js";

/**
 * @typedef {"connecting" | "buffering" | "playing" | "reconnecting" | "ended" | "failed"} PlayerStateName
 */

/**
 * @typedef {object} PlayerState
 * @property {PlayerStateName} state
 * @property {number | null} ttffMs Time from `createPlayer` to the first video frame, set when the video
 *   first plays.
 * @property {string} [reason] Why the player ended, failed or reconnects (a close reason or an error);
 *   cleared once it plays again.
 * @property {number} [closeCode] The media WebSocket's close code, while it matters (cleared likewise).
 * @property {boolean} muted Whether autoplay rules forced the video to start muted.
 * @property {boolean} microphone Whether the microphone is being streamed.
 * @property {string} [microphoneError] Why the microphone is not streamed although it was asked for
 *   (refused, absent, …); cleared when it starts.
 */

/**
 * @typedef {object} TranscriptLine
 * @property {"user" | "agent"} role
 * @property {string} turnId
 * @property {string} text The whole text so far for this turn.
 * @property {boolean} final
 */

/**
 * @typedef {object} StreamMetadata `stream_metadata` of a create or client-token answer.
 * @property {string | null} [media_url]
 * @property {string | null} [sfu_endpoint]
 * @property {string} [transport] The session's transport (`websocket_fmp4`, `webrtc_sfu`): which player plays it.
 * @property {string} [session_token]
 * @property {{ urls: string | string[]; username?: string; credential?: string }[]} [ice_servers]
 */

/**
 * @typedef {object} CreatePlayerOptions
 * @property {HTMLVideoElement} [video] The element to play in (required unless `canvas` is given).
 * @property {HTMLCanvasElement} [canvas] Video-free (`websocket_fmp4` sessions with WebCodecs, or
 *   `webrtc_sfu` sessions: the animation track on a data channel): no video is
 *   sent; the player plays the sound and draws the avatar on this canvas from the service's art and the
 *   animation track, in step with the sound (docs/media-plane.md#video-free-clients). Its width and
 *   height are the drawing's pixel size; the `transparent` background leaves the page visible around the
 *   avatar. `state: "playing"` once the first picture is drawn.
 * @property {number} [canvasDisplayMs] Video-free: how long a canvas drawing takes to reach the screen (ms;
 *   default 16, one refresh at 60 Hz); the instant drawn is the one heard then. A page whose display is slower
 *   sets more. `stats().avOffsetMs` says how the pictures and the sound met (+: the picture is late).
 * @property {StreamMetadata} [streamMetadata] The session's `stream_metadata` (either transport); or `mediaUrl`.
 * @property {string} [mediaUrl] `stream_metadata.media_url` of a `websocket_fmp4` session.
 * @property {string} clientToken `client_token` of the session (valid 5 minutes, needed to connect).
 * @property {(state: PlayerState) => void} [onState] Called on every state change.
 * @property {(line: TranscriptLine) => void} [onTranscript] Called with transcript lines, if the engine sends any.
 * @property {(call: import("./tool_calls.js").ToolCall) => unknown} [onToolCall] Called with each tool call of
 *   the engine; answer with `call.respond(output)`, or return the output (or a promise of it).
 * @property {() => Promise<{ clientToken: string; mediaUrl?: string; streamMetadata?: StreamMetadata }>} [refreshToken]
 *   Returns a fresh client token and `stream_metadata` (from your backend, which calls
 *   `POST /v1/sessions/{id}/client-token`); used to reconnect. Any other shape fails the player with a
 *   message saying so.
 * @property {RTCIceTransportPolicy} [iceTransportPolicy] `webrtc_sfu` only: `"relay"` forces TURN.
 * @property {boolean} [microphone] Stream the microphone (default true).
 * @property {number} [targetLatencyMs] Media Source Extensions only: playback delay behind the live edge
 *   to aim for (default 200).
 * @property {number} [maxLatencyMs] Media Source Extensions only: past this delay the player jumps back to
 *   the live edge (default 800).
 * @property {number} [maxReconnects] Reconnection attempts in a row before failing (default 5).
 * @property {"auto" | "webcodecs" | "mse"} [playback] `websocket_fmp4` only: how to play — WebCodecs where
 *   the browser has it (`"auto"`, the default), or Media Source Extensions (`"mse"`).
 * @property {AudioContext} [audioContext] WebCodecs only: the context to play the avatar's sound in
 *   (default: one of the player's own).
 * @property {AudioNode} [audioOutput] WebCodecs only: where the avatar's sound goes (default: the context's
 *   destination), e.g. your own audio graph.
 * @property {number | "read"} [outputLatencyMs] WebCodecs only: how long after the AudioContext renders a
 *   sample it is heard (ms, 0–1000). Given, the player never asks the browser for it; `"read"`: it always
 *   asks. By default it asks (`outputLatency`, `getOutputTimestamp()`), except in Firefox on Linux, where the
 *   first such read can freeze the page and it assumes 47 ms (docs/media-plane.md, "In Firefox").
 */

/**
 * @typedef {object} PlayerStats
 * @property {number} framesDecoded
 * @property {number} framesDropped
 * @property {number} latencyMs Frame made on the server → shown, median of the last 2 s (ms).
 * @property {number | null} avOffsetMs A shown frame's display time − its sound leaving the player, median
 *   of the last 2 s (ms; + the picture is late); null until measured.
 * @property {number} stalls Times the media stopped arriving.
 * @property {number} catchUps Times the player skipped late media to get back to the live edge.
 * @property {number | null} lastCatchUpMs End of the last stall → playing at the live edge again.
 * @property {number} skippedMs Media skipped so far (ms): late media after a stall, and (WebCodecs) sound
 *   skipped where the anchor falls — its start-up settling's among it.
 * @property {number} speechSkippedMs Of `skippedMs`, the sound that was loud (ms; WebCodecs, 0 otherwise):
 *   speech this viewer did not hear because it came too late to play, or was skipped to catch up (the
 *   anchor's falls go where the sound is quiet).
 * @property {number} audioUnderrunMs Audio played as silence because it was not there in time (ms): units
 *   that came late — the silence between sounds among them — the start-up's, and the silence inserted when
 *   the anchor rises.
 * @property {number | null} audioDecodedMs WebCodecs: sound decoded so far (ms); null where the browser
 *   decodes it (Media Source Extensions, WebRTC).
 * @property {number | null} anchorMs WebCodecs: how far behind the server's media clock the sound plays.
 * @property {"webcodecs" | "mse" | "webrtc"} playback How the player plays.
 * @property {number} bytesReceived
 * @property {number} micFramesSent
 * @property {number} reconnects
 */

/**
 * @typedef {object} AvatarPlayer
 * @property {() => PlayerState} state The current state.
 * @property {() => PlayerStats} stats Playback counters.
 * @property {(on: boolean) => Promise<void>} setMicrophone Starts or stops streaming the microphone.
 * @property {(callId: string, output?: unknown, options?: { isError?: boolean }) => boolean} respondToolCall
 *   Answers a tool call by id (as `call.respond` does).
 * @property {() => void} close Disconnects and releases the microphone and the media resources.
 */

/**
 * Creates a player and connects it. Invalid options (no video element, a `mediaUrl` that is not a
 * `ws:`/`wss:` URL, an empty `clientToken`, a `refreshToken` that is not a function) throw a `TypeError`.
 *
 * @param {CreatePlayerOptions} options
 * @returns {AvatarPlayer}
 */
export function createPlayer(options) {
  return playerOf(options?.streamMetadata).create(options);
}

/**
 * @typedef {object} TransportPlayer One transport's player.
 * @property {"media_url" | "sfu_endpoint"} endpoint The `stream_metadata` field its sessions fill (how a
 *   `stream_metadata` without `transport`, from a service before that field, is matched).
 * @property {(options: CreatePlayerOptions) => AvatarPlayer} create Checks the options, creates the player
 *   and connects it.
 */

/**
 * The players, by the transport `stream_metadata.transport` names (the service's transport registry,
 * `src/vocabulary/transports.ts`, names each one's module). A third transport: one entry here, and its
 * module beside this one.
 *
 * @type {Record<string, TransportPlayer>}
 */
const PLAYERS = {
  websocket_fmp4: {
    endpoint: "media_url",
    create: (options) => {
      checkOptions(options);
      return createFmp4Player(options);
    },
  },
  webrtc_sfu: { endpoint: "sfu_endpoint", create: createWebRtcPlayer },
};

/**
 * The player of a session's `stream_metadata`: the one its `transport` names; without `transport` (only a
 * `mediaUrl`, or a service before that field), the one whose endpoint field it fills, else `websocket_fmp4`.
 *
 * @param {StreamMetadata | undefined} meta
 * @returns {TransportPlayer}
 */
function playerOf(meta) {
  const named = meta?.transport;
  if (named !== undefined && named !== null) {
    if (typeof named === "string" && Object.hasOwn(PLAYERS, named)) return PLAYERS[named];
    throw new TypeError(
      `createPlayer: streamMetadata.transport must be one of ${Object.keys(PLAYERS).join(", ")}; got ${
        typeof named === "string" ? JSON.stringify(named.slice(0, 40)) : describe(named)
      }`,
    );
  }
  return Object.values(PLAYERS).find((p) => meta?.[p.endpoint]) ?? PLAYERS.websocket_fmp4;
}

/** @param {CreatePlayerOptions} options */
function checkOptions(options) {
  if (options === null || typeof options !== "object") {
    throw new TypeError("createPlayer: options must be an object");
  }
  const video = /** @type {unknown} */ (options.video);
  const canvas = /** @type {unknown} */ (options.canvas);
  if (canvas !== undefined) {
    if (!canvas || typeof (/** @type {any} */ (canvas)).getContext !== "function") {
      throw new TypeError("createPlayer: canvas must be a <canvas> element");
    }
  } else if (!video || typeof video !== "object" || typeof (/** @type {any} */ (video)).play !== "function") {
    throw new TypeError("createPlayer: video must be a <video> element");
  }
  const mediaUrl = options.mediaUrl ?? options.streamMetadata?.media_url;
  if (typeof mediaUrl !== "string" || !/^wss?:\/\/\S+$/.test(mediaUrl)) {
    throw new TypeError(
      `createPlayer: mediaUrl must be the session's ws:// or wss:// media URL (stream_metadata.media_url, or pass streamMetadata); got ${
        describe(mediaUrl)
      }`,
    );
  }
  if (typeof options.clientToken !== "string" || options.clientToken.length === 0) {
    throw new TypeError(
      `createPlayer: clientToken must be the session's client_token; got ${describe(options.clientToken)}`,
    );
  }
  if (options.refreshToken !== undefined && typeof options.refreshToken !== "function") {
    throw new TypeError("createPlayer: refreshToken must be a function");
  }
  const latency = /** @type {unknown} */ (options.outputLatencyMs);
  if (
    latency !== undefined && latency !== "read" &&
    !(typeof latency === "number" && Number.isFinite(latency) && latency >= 0 && latency <= 1000)
  ) {
    throw new TypeError(
      `createPlayer: outputLatencyMs must be a number of ms from 0 to 1000, or "read"; got ${
        typeof latency === "number" ? latency : describe(latency)
      }`,
    );
  }
}

/**
 * Describes a value for an error message without printing it (it may hold a token).
 * @param {unknown} value
 */
function describe(value) {
  if (value === null || value === undefined) return String(value);
  if (typeof value === "string") return value.length ? "a string of the wrong form" : "an empty string";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") {
    const keys = Object.keys(value);
    return keys.length ? `an object with the keys ${keys.slice(0, 8).join(", ")}` : "an empty object";
  }
  return `a ${typeof value}`;
}

/**
 * Checks what `refreshToken()` resolved to; returns an error message, or null when it is usable.
 * @param {unknown} fresh
 * @returns {string | null}
 */
function refreshProblem(fresh) {
  const f = /** @type {{ clientToken?: unknown; mediaUrl?: unknown; streamMetadata?: any } | null} */ (fresh);
  const url = f !== null && typeof f === "object" ? f.mediaUrl ?? f.streamMetadata?.media_url : undefined;
  const ok = f !== null && typeof f === "object" && typeof f.clientToken === "string" &&
    f.clientToken.length > 0 &&
    (url === undefined || url === null || (typeof url === "string" && /^wss?:\/\/\S+$/.test(url)));
  return ok
    ? null
    : `refreshToken() must resolve to { clientToken: string, mediaUrl?: string } (a ws:// or wss:// URL); it resolved to ${
      describe(fresh)
    }`;
}

/**
 * The `websocket_fmp4` player: the media WebSocket, the microphone, reconnection, and a media sink that
 * plays what arrives — WebCodecs where the browser has it (`./player_webcodecs.js`), Media Source
 * Extensions otherwise ({@link createMseSink}), or as `options.playback` says.
 *
 * How it decides it is playing: the state goes to `playing` only on the element's `playing` event while
 * connected, and back to `buffering` when the sink says nothing new can be shown (the element waits for
 * data, is paused, or the stream stalled).
 *
 * @param {CreatePlayerOptions} options
 * @returns {AvatarPlayer}
 */
function createFmp4Player(options) {
  const canvas = options.canvas ?? null;
  /** Video-free: the sound and the animation track; the avatar drawn on `canvas`. */
  const videoFree = canvas !== null;
  const video = /** @type {HTMLVideoElement} */ (videoFree ? null : options.video);
  const maxReconnects = options.maxReconnects ?? 5;
  const started = performance.now();
  let mediaUrl = /** @type {string} */ (options.mediaUrl ?? options.streamMetadata?.media_url);
  let token = options.clientToken;

  /** @type {PlayerState} */
  let current = { state: "connecting", ttffMs: null, muted: false, microphone: false };
  /** @type {WebSocket | null} */
  let ws = null;
  /** Whether the current socket has said hello (the stream is flowing). */
  let connected = false;
  /** When the current socket was opened; its connect → first frame (reported once). */
  let connectAt = started;
  /** @type {number | null} */
  let connectionFirstFrameMs = null;
  let firstFrameReported = false;
  let inputSampleRate = 24000;
  let closed = false;
  let failures = 0;
  let reconnects = 0;
  let bytesReceived = 0;
  let micFramesSent = 0;
  let micWanted = options.microphone ?? true;
  /** @type {{ stream: MediaStream; ctx: AudioContext; node: AudioWorkletNode } | null} */
  let mic = null;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let retryTimer;
  /**
   * The reason of the service's `{"type":"ended"}`, once received: the session is over, so the close that
   * follows ends the player whatever code it comes with (see {@link onClose}).
   * @type {string | null}
   */
  let endedReason = null;
  const toolCalls = createToolCalls({ onToolCall: options.onToolCall, socket: () => ws });

  /**
   * Applies `patch` and tells the app. A `reason`, `closeCode` or `microphoneError` set to `undefined` is
   * removed.
   * @param {Partial<PlayerState>} patch
   */
  const setState = (patch) => {
    /** @type {Record<string, unknown>} */
    const next = { ...current, ...patch };
    for (const k of ["reason", "closeCode", "microphoneError"]) if (next[k] === undefined) delete next[k];
    current = /** @type {PlayerState} */ (next);
    try {
      options.onState?.({ ...current });
    } catch (err) {
      console.error("onState handler failed", err);
    }
  };

  /**
   * The sink's events: the element's own `playing` decides `playing`.
   * @type {import("./player_webcodecs.js").SinkEvents}
   */
  const sinkEvents = {
    playing: () => {
      if (closed || !connected || current.state === "playing") return;
      const ttffMs = current.ttffMs ?? Math.round((firstFrameAt ?? performance.now()) - started);
      setState({ state: "playing", ttffMs, reason: undefined, closeCode: undefined });
    },
    buffering: () => {
      if (closed || current.state !== "playing") return;
      setState({ state: "buffering" });
    },
    muted: (/** @type {boolean} */ muted) => {
      if (!closed && current.muted !== muted) setState({ muted });
    },
    unsupported: (/** @type {string} */ reason) => {
      if (videoFree) {
        fail(`video-free playback needs WebCodecs: ${reason}`);
        return;
      }
      // WebCodecs cannot play this stream here after all: Media Source Extensions instead.
      if (closed || sink.playback !== "webcodecs") return;
      console.warn(`avatar player: ${reason}; playing through Media Source Extensions`);
      sink.close();
      sink = createMseSink({ video, events: sinkEvents, options });
      sink.onFirstFrame(onFirstFrame);
      const socket = ws;
      ws = null;
      connected = false;
      if (socket && socket.readyState <= WebSocket.OPEN) socket.close(1000);
      connect();
    },
  };

  /** When the first video frame was presented (requestVideoFrameCallback), if the browser says. */
  /** @type {number | null} */
  let firstFrameAt = null;
  const onFirstFrame = (/** @type {number} */ at) => {
    firstFrameAt ??= at;
    if (connected) connectionFirstFrameMs ??= Math.max(0, Math.round(at - connectAt));
    if (current.state === "playing" && current.ttffMs === null) {
      setState({ ttffMs: Math.round(at - started) });
    }
  };

  /** The URL of the avatar's art at `path` (a project avatar's is served only with the session's token). */
  const artUrl = (/** @type {string} */ path) => {
    const url = new URL(path, httpOrigin(mediaUrl));
    if (url.pathname.startsWith("/media/v0/art/av_")) url.searchParams.set("token", token);
    return url.href;
  };
  const useWebCodecs = videoFree || options.playback === "webcodecs" ||
    (options.playback !== "mse" && webCodecsSupported());
  /** @type {MediaSink} */
  let sink = useWebCodecs
    ? createWebCodecsSink({
      video: videoFree ? null : video,
      audioContext: options.audioContext,
      audioOutput: options.audioOutput,
      outputLatencyMs: options.outputLatencyMs,
      events: sinkEvents,
      fetchArt: async (/** @type {string} */ path) => {
        const res = await fetch(artUrl(path));
        if (!res.ok) throw new Error(`the avatar's art answered ${res.status}`);
        return await res.json();
      },
    })
    : createMseSink({ video, events: sinkEvents, options });
  sink.onFirstFrame(onFirstFrame);
  const onVideoPlaying = () => sinkEvents.playing();
  video?.addEventListener("playing", onVideoPlaying);
  /** Video-free: the avatar drawn at the instant the sound is heard, 25 times a second. */
  const avatar = videoFree
    ? createAvatarDrawer({
      canvas: /** @type {HTMLCanvasElement} */ (canvas),
      origin: httpOrigin(mediaUrl),
      soundStarts: () => sink.soundStarts?.() ?? [],
      token: () => token,
    })
    : null;
  let drawRaf = 0;
  /** How long a canvas drawing takes to reach the screen (ms): the instant drawn is the one heard then. */
  const displayMs = Number.isFinite(options.canvasDisplayMs)
    ? Number(options.canvasDisplayMs)
    : CANVAS_DISPLAY_MS;
  /** The instant of the picture drawn in the previous animation frame (on screen from this one's start). */
  /** @type {number | null} */
  let drawnInstant = null;
  const drawLoop = (/** @type {number} */ frameTime) => {
    if (closed || !avatar) return;
    // A picture drawn in an animation frame is presented with it: on screen by the next one's start. The
    // player measures it as it does a video frame (`av_offset_ms`, presented frames).
    if (drawnInstant !== null) sink.canvasShown?.(drawnInstant, frameTime);
    drawnInstant = null;
    const t = sink.timelineNow?.() ?? null;
    // A canvas drawn now is on screen about one refresh later: draw the instant heard then.
    if (t !== null && connected) {
      const before = avatar.stats().frames;
      const drawn = avatar.draw(t + displayMs);
      if (avatar.stats().frames > before) drawnInstant = t + displayMs;
      if (drawn && firstFrameAt === null) {
        onFirstFrame(performance.now());
        sinkEvents.playing();
      }
    } else if (connected && firstFrameAt === null && avatar.draw(-Infinity)) {
      // The sound's clock is not running yet (Firefox opened its audio device 0.9–2.2 s after the page made
      // its context, measured on a PulseAudio sink; the first picture waited for it): the face at rest, which
      // belongs to no instant, as soon as its art is in.
      onFirstFrame(performance.now());
      sinkEvents.playing();
    }
    drawRaf = requestAnimationFrame(drawLoop);
  };
  if (avatar) drawRaf = requestAnimationFrame(drawLoop);

  /**
   * @param {string} reason
   * @param {number} [closeCode] the close that led here, if any
   */
  const fail = (reason, closeCode) => {
    if (closed) return;
    teardown();
    setState({ state: "failed", reason, closeCode });
  };

  const connect = () => {
    if (closed) return;
    const url = videoFree ? `${mediaUrl}${mediaUrl.includes("?") ? "&" : "?"}video=0` : mediaUrl;
    const socket = new WebSocket(url, [...sink.subprotocols, MEDIA_SUBPROTOCOL, `bearer.${token}`]);
    socket.binaryType = "arraybuffer";
    ws = socket;
    connectAt = performance.now();
    connectionFirstFrameMs = null;
    firstFrameReported = false;
    socket.onmessage = (e) => {
      if (ws !== socket) return;
      const arrivedAt = performance.now();
      if (typeof e.data === "string") {
        let msg;
        try {
          msg = JSON.parse(e.data);
        } catch {
          return;
        }
        onControl(msg, socket, arrivedAt);
        return;
      }
      bytesReceived += e.data.byteLength;
      failures = 0;
      sink.media(e.data, arrivedAt);
    };
    socket.onclose = (e) => {
      if (ws !== socket) return;
      ws = null;
      connected = false;
      sink.disconnected();
      void onClose(e.code, e.reason);
    };
    socket.onerror = () => {};
  };

  /**
   * @param {any} msg
   * @param {WebSocket} socket
   * @param {number} arrivedAt
   */
  const onControl = (msg, socket, arrivedAt) => {
    switch (msg?.type) {
      case "hello": {
        inputSampleRate = Number(msg.input_sample_rate) || inputSampleRate;
        connected = true;
        // (the avatar's art first: its first picture is decoded while the sink sets up)
        if (avatar && msg.animation) avatar.configure(msg.animation);
        sink.hello(msg, socket.protocol, arrivedAt);
        clockSync.start();
        if (closed) return;
        // Connected (again): the stale close reason goes. `playing` comes from the element itself; after a
        // reconnection the element may still be playing what it had.
        const playingNow = video
          ? !video.paused && video.readyState >= 3 && current.ttffMs !== null
          : current.state === "playing" || (avatar !== null && current.ttffMs !== null);
        setState({ state: playingNow ? "playing" : "buffering", reason: undefined, closeCode: undefined });
        if (micWanted && !mic) void startMic();
        break;
      }
      case "interrupt":
        // Barge-in: skip the avatar speech that is already buffered (and the visemes after its cut).
        sink.interrupt();
        if (avatar && typeof msg.t_ms === "number") avatar.interrupt(msg.t_ms);
        break;
      case "viseme":
      case "face":
      case "head":
        avatar?.push(msg);
        if (avatar && typeof msg.t_ms === "number") {
          sink.animationArrived?.(msg.t_ms, arrivedAt, displayMs + ANIMATION_FRAME_WAIT_MS);
        }
        break;
      case "transcript":
        options.onTranscript?.({ role: msg.role, turnId: msg.turn_id, text: msg.text, final: msg.final });
        break;
      case "tool_call":
        toolCalls.handle(msg);
        break;
      case "clock_sync":
        clockSync.receive(msg, arrivedAt);
        break;
      case "ended":
        endedReason = String(msg.reason ?? "session_ended");
        setState({ reason: endedReason });
        break;
    }
  };

  /** Where the session's media clock is on the page's clock (for the frame latency the sink measures). */
  const clockSync = createClockSync((/** @type {string} */ text) => {
    if (!ws || ws.readyState !== WebSocket.OPEN) return false;
    ws.send(text);
    return true;
  }, (/** @type {number} */ offset) => sink.clockOffset(offset));

  /**
   * @param {number} code
   * @param {string} reason
   */
  const onClose = async (code, reason) => {
    if (closed) return;
    // After the service's `ended` the session is over, whatever the close says: its close frame can be lost
    // (the connection reset as the service closes it while the page still sends — 1006 here), and a
    // reconnection would only find the session gone (4404) and fail a session that ended cleanly.
    if (code === 1000 || endedReason === "session_ended") {
      teardown();
      setState({ state: "ended", closeCode: code, reason: reason || current.reason || "session_ended" });
      return;
    }
    if (FINAL_CLOSES.has(code) || endedReason !== null) {
      teardown();
      setState({ state: "failed", closeCode: code, reason: reason || endedReason || "" });
      return;
    }
    if (++failures > maxReconnects) {
      fail(`gave up after ${maxReconnects} reconnection attempts (${code} ${reason})`, code);
      return;
    }
    setState({ state: "reconnecting", closeCode: code, reason });
    if (code === 4401 && !options.refreshToken) {
      fail("the client token expired and no refreshToken callback was given", code);
      return;
    }
    if (options.refreshToken) {
      let fresh;
      try {
        fresh = await options.refreshToken();
      } catch (err) {
        fail(`could not refresh the client token: ${err}`, code);
        return;
      }
      if (closed) return;
      const problem = refreshProblem(fresh);
      if (problem) {
        fail(problem, code);
        return;
      }
      token = fresh.clientToken;
      const url = fresh.mediaUrl ?? fresh.streamMetadata?.media_url;
      if (url) mediaUrl = url;
    }
    reconnects++;
    const delay = Math.min(4000, 250 * 2 ** (failures - 1));
    retryTimer = setTimeout(connect, delay);
  };

  const startMic = async () => {
    if (mic || closed) return;
    try {
      if (!navigator.mediaDevices?.getUserMedia) {
        throw new Error("this page cannot use a microphone (not a secure context?)");
      }
      const stream = await navigator.mediaDevices.getUserMedia({
        audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true, autoGainControl: true },
      });
      const ctx = new AudioContext();
      const code = `class Capture extends AudioWorkletProcessor {
        constructor(o) { super(); this.step = sampleRate / o.processorOptions.rate; this.t = 0; this.last = 0;
          this.size = Math.round(o.processorOptions.rate / 50); this.frame = new Int16Array(this.size); this.n = 0; }
        process(inputs) {
          const x = inputs[0] && inputs[0][0]; if (!x) return true;
          let t = this.t;
          while (t < x.length - 1) {
            const i = Math.floor(t), f = t - i, a = i < 0 ? this.last : x[i], b = x[i + 1];
            const s = Math.max(-1, Math.min(1, a + (b - a) * f));
            this.frame[this.n++] = s < 0 ? s * 32768 : s * 32767;
            if (this.n === this.size) { this.port.postMessage(this.frame.buffer, [this.frame.buffer]);
              this.frame = new Int16Array(this.size); this.n = 0; }
            t += this.step;
          }
          this.t = t - x.length; this.last = x[x.length - 1];
          return true;
        }
      }
      registerProcessor("avatar-capture", Capture);`;
      const url = URL.createObjectURL(new Blob([code], { type: "text/javascript" }));
      await ctx.audioWorklet.addModule(url);
      URL.revokeObjectURL(url);
      const node = new AudioWorkletNode(ctx, "avatar-capture", {
        processorOptions: { rate: inputSampleRate },
      });
      node.port.onmessage = (e) => {
        if (ws && ws.readyState === WebSocket.OPEN && micWanted) {
          ws.send(e.data);
          micFramesSent++;
        }
      };
      const sinkNode = ctx.createGain();
      sinkNode.gain.value = 0;
      ctx.createMediaStreamSource(stream).connect(node).connect(sinkNode).connect(ctx.destination);
      if (ctx.state === "suspended") await ctx.resume().catch(() => {});
      if (closed || !micWanted) {
        stream.getTracks().forEach((t) => t.stop());
        await ctx.close();
        return;
      }
      mic = { stream, ctx, node };
      setState({ microphone: true, microphoneError: undefined });
    } catch (err) {
      micWanted = false;
      const e = /** @type {{ name?: string; message?: string }} */ (err);
      setState({
        microphone: false,
        microphoneError: e && e.name === "NotAllowedError"
          ? "the microphone was refused"
          : `the microphone is unavailable: ${e && e.message ? e.message : String(err)}`,
      });
    }
  };

  const stopMic = () => {
    if (!mic) return;
    mic.stream.getTracks().forEach((t) => t.stop());
    mic.node.port.onmessage = null;
    void mic.ctx.close().catch(() => {});
    mic = null;
    if (!closed) setState({ microphone: false });
  };

  // What the player measured goes to the service every couple of seconds.
  const stopReporting = startReporting({
    get playback() {
      return sink.playback;
    },
    build: () => {
      const r = sink.report();
      if (connectionFirstFrameMs === null || firstFrameReported) return r;
      firstFrameReported = true;
      return { first_frame_ms: connectionFirstFrameMs, ...r };
    },
    send: (/** @type {string} */ text) => {
      if (!ws || ws.readyState !== WebSocket.OPEN || !connected) return false;
      ws.send(text);
      return true;
    },
  });

  const teardown = () => {
    clearTimeout(retryTimer);
    stopReporting();
    clockSync.stop();
    stopMic();
    video?.removeEventListener("playing", onVideoPlaying);
    if (drawRaf) cancelAnimationFrame(drawRaf);
    avatar?.close();
    const socket = ws;
    ws = null;
    connected = false;
    if (socket && socket.readyState <= WebSocket.OPEN) socket.close(1000);
    sink.close();
    closed = true;
  };

  if (video) video.playsInline = true;
  setState({ state: "connecting" });
  connect();

  return {
    state: () => ({ ...current }),
    stats: () => ({
      ...sink.stats(),
      playback: sink.playback,
      bytesReceived,
      micFramesSent,
      reconnects,
    }),
    setMicrophone: async (on) => {
      micWanted = on;
      if (on) await startMic();
      else stopMic();
    },
    respondToolCall: (
      /** @type {string} */ callId,
      /** @type {unknown} */ output,
      /** @type {{ isError?: boolean } | undefined} */ opts,
    ) => toolCalls.respond(callId, output, opts),
    close: () => {
      if (closed) return;
      teardown();
      setState({ state: "ended", reason: "closed" });
    },
  };
}

/**
 * @typedef {object} MediaSinkStats
 * @property {number} framesDecoded
 * @property {number} framesDropped
 * @property {number} latencyMs
 * @property {number | null} avOffsetMs
 * @property {number} stalls
 * @property {number} catchUps
 * @property {number | null} lastCatchUpMs
 * @property {number} skippedMs
 * @property {number} speechSkippedMs
 * @property {number} audioUnderrunMs
 * @property {number | null} audioDecodedMs
 * @property {number | null} anchorMs
 */

/**
 * What plays the stream of a `websocket_fmp4` player (WebCodecs or Media Source Extensions).
 * @typedef {object} MediaSink
 * @property {"webcodecs" | "mse"} playback
 * @property {string[]} subprotocols Offered before `avatar-media.v0`.
 * @property {(msg: any, protocol: string, arrivedAt: number) => void} hello
 * @property {(data: ArrayBuffer, arrivedAt: number) => void} media
 * @property {() => void} interrupt
 * @property {() => number | null} [timelineNow] WebCodecs: the timeline instant heard now (once anchored).
 * @property {() => number[]} [soundStarts] Timeline instants (ms) where a sound starts after a silence, found
 *   in the decoded audio (the recent ones), if the sink exposes them: the video-free drawer opens the mouth
 *   there rather than at the lip sync's stamp.
 * @property {(tMs: number, arrivedAt: number, aheadMs: number) => void} [animationArrived] WebCodecs,
 *   video-free: a stamp of the animation track arrived (the anchor covers their lateness).
 * @property {(instantMs: number, shownAt: number) => void} [canvasShown] WebCodecs, video-free: the picture of
 *   timeline `instantMs` was on screen at page time `shownAt` (measured as a presented frame).
 * @property {() => void} disconnected
 * @property {(offset: number) => void} clockOffset The page time of timeline 0 (from `clock_sync`).
 * @property {(cb: (at: number) => void) => void} onFirstFrame
 * @property {() => MediaSinkStats} stats
 * @property {() => Record<string, unknown> & { presented_frames: number }} report
 * @property {() => void} close
 */

/**
 * The Media Source Extensions sink: the fMP4 stream appended to a `SourceBuffer` of the `<video>`. It keeps
 * about `targetLatencyMs` behind the live edge (jumps back past `maxLatencyMs`, and on barge-in), trims
 * what it has played, and starts the element whenever media is buffered and it is paused, after every
 * append, so no ordering of the browser's events (first frame, `updateend`, `canplay`) can leave a paused
 * element behind a `playing` state. Its measures (frame latency, mouth vs sound) are estimates from the
 * element's clock (docs/media-plane.md).
 *
 * @param {{ video: HTMLVideoElement; events: import("./player_webcodecs.js").SinkEvents; options: CreatePlayerOptions }} o
 * @returns {MediaSink}
 */
function createMseSink({ video, events, options }) {
  const target = (options.targetLatencyMs ?? 200) / 1000;
  const maxLatency = (options.maxLatencyMs ?? 800) / 1000;
  /** @type {MediaSource | null} */
  let mediaSource = null;
  /** @type {SourceBuffer | null} */
  let sourceBuffer = null;
  /** @type {ArrayBuffer[]} */
  const appendQueue = [];
  let lastTrim = 0;
  let playPending = false;
  let closed = false;
  /** Page time of timeline 0 as the service's hello says. */
  /** @type {number | null} */
  let skew = null;
  const counters = { stalls: 0, stallMs: 0, catchUps: 0, skippedMs: 0, presented: 0 };
  let reported = { ...counters, dropped: 0 };
  /** @type {number | null} */
  let waitingSince = null;
  /** @type {number[]} */
  let latencySamples = [];
  /** @type {number[]} */
  let avSamples = [];
  /** @type {[number, number, number][]} */
  const recent = [];
  /** @type {((at: number) => void) | null} */
  let firstFrameListener = null;

  const liveEdge = () => {
    const b = sourceBuffer?.buffered;
    return b && b.length ? b.end(b.length - 1) : null;
  };

  const catchUp = () => {
    const edge = liveEdge();
    if (edge === null) return;
    const b = /** @type {SourceBuffer} */ (sourceBuffer).buffered;
    const start = b.start(b.length - 1);
    // Behind the target (it joined at the GOP's keyframe, up to a second old, or fell behind): play a little
    // faster (pitch kept) until back at it, rather than seek (a seek stalls MSE playback for a while).
    if (!video.paused) {
      const lag = edge - video.currentTime;
      const rate = lag > target + 0.06 ? CATCH_UP_RATE : lag < target + 0.02 ? 1 : video.playbackRate;
      if (video.playbackRate !== rate) video.playbackRate = rate;
    }
    // Jump to the live edge when far behind, or when stuck before the newest buffered range (a gap).
    if (edge - video.currentTime > maxLatency || video.currentTime < start) {
      const to = Math.max(start, edge - target);
      if (video.currentTime > 0 && to > video.currentTime) {
        counters.catchUps++;
        counters.skippedMs += (to - video.currentTime) * 1000;
      }
      video.currentTime = to;
    }
  };

  /** Starts the element when media is buffered and it is paused (whatever the state says). */
  const startPlayback = () => {
    if (closed || playPending || !video.paused || liveEdge() === null) return;
    playPending = true;
    video.play().then(() => {
      playPending = false;
    }, (err) => {
      playPending = false;
      if (err && err.name === "NotAllowedError" && !video.muted) {
        // Autoplay with sound was refused: start muted (the app can unmute on a click).
        video.muted = true;
        events.muted(true);
        startPlayback();
      }
      // Otherwise (a seek or a new source interrupted it): the next append tries again.
    });
  };

  const pump = () => {
    if (!sourceBuffer || sourceBuffer.updating || !appendQueue.length) return;
    const now = video.currentTime;
    if (now - lastTrim > 10 && sourceBuffer.buffered.length && sourceBuffer.buffered.start(0) < now - 10) {
      lastTrim = now;
      sourceBuffer.remove(0, now - 5);
      return;
    }
    const chunk = /** @type {ArrayBuffer} */ (appendQueue.shift());
    try {
      sourceBuffer.appendBuffer(chunk);
    } catch (err) {
      if (err instanceof DOMException && err.name === "QuotaExceededError" && sourceBuffer.buffered.length) {
        appendQueue.unshift(chunk);
        sourceBuffer.remove(0, Math.max(0, video.currentTime - 1));
      } else {
        console.warn("avatar player: append failed", err);
      }
    }
  };

  /** @param {string} mime */
  const setupMediaSource = (mime) => {
    if (mediaSource) return;
    if (!("MediaSource" in globalThis) || !MediaSource.isTypeSupported(mime)) {
      events.unsupported(`this browser cannot play ${mime}`);
      return;
    }
    const source = new MediaSource();
    mediaSource = source;
    const objectUrl = URL.createObjectURL(source);
    video.src = objectUrl;
    source.addEventListener("sourceopen", () => {
      URL.revokeObjectURL(objectUrl);
      if (closed || mediaSource !== source || sourceBuffer) return;
      sourceBuffer = source.addSourceBuffer(mime);
      sourceBuffer.mode = "segments";
      sourceBuffer.addEventListener("updateend", () => {
        if (closed) return;
        catchUp();
        startPlayback();
        pump();
      });
      pump();
    }, { once: true });
  };

  const onWaiting = () => {
    if (closed) return;
    waitingSince ??= performance.now();
    events.buffering();
  };
  const onPause = () => {
    if (!closed) events.buffering();
  };
  const onPlaying = () => {
    if (waitingSince !== null) {
      counters.stalls++;
      counters.stallMs += performance.now() - waitingSince;
      waitingSince = null;
    }
  };
  const onCanPlay = () => startPlayback();
  /** @type {[string, () => void][]} */
  const videoListeners = [["waiting", onWaiting], ["pause", onPause], ["playing", onPlaying], [
    "canplay",
    onCanPlay,
  ]];
  for (const [type, fn] of videoListeners) video.addEventListener(type, fn);

  // Each displayed frame: its delay since it was made, and against the element's (audio) clock.
  const v = /** @type {any} */ (video);
  if (typeof v.requestVideoFrameCallback === "function") {
    /** @param {number} now @param {any} md */
    const onFrame = (now, md) => {
      if (closed) return;
      const shownAt = md.expectedDisplayTime ?? now;
      if (firstFrameListener) {
        const l = firstFrameListener;
        firstFrameListener = null;
        l(shownAt);
      }
      counters.presented++;
      if (skew !== null && typeof md.mediaTime === "number" && !video.paused) {
        const latency = shownAt - (md.mediaTime * 1000 + skew);
        // The element's clock is its audio clock: the frame's instant is heard when currentTime reaches it.
        const av = (shownAt - performance.now()) - (md.mediaTime - video.currentTime) * 1000;
        if (latency > -1000 && latency < 60000) {
          if (latencySamples.length < 200) latencySamples.push(Math.round(latency * 10) / 10);
          if (avSamples.length < 200) avSamples.push(Math.round(av * 10) / 10);
          recent.push([shownAt, latency, av]);
          if (recent.length > 75) recent.shift();
        }
      }
      v.requestVideoFrameCallback(onFrame);
    };
    v.requestVideoFrameCallback(onFrame);
  }

  return {
    playback: "mse",
    subprotocols: [],
    hello(msg, _protocol, arrivedAt) {
      if (typeof msg.timeline_ms === "number") skew ??= arrivedAt - msg.timeline_ms;
      setupMediaSource(String(msg.mime));
      startPlayback();
    },
    media(data) {
      appendQueue.push(data);
      pump();
    },
    interrupt() {
      const edge = liveEdge();
      if (edge !== null && edge - video.currentTime > target) video.currentTime = edge - target / 2;
    },
    disconnected() {},
    clockOffset(offset) {
      skew = offset;
    },
    onFirstFrame(cb) {
      firstFrameListener = cb;
    },
    stats() {
      const q = typeof video.getVideoPlaybackQuality === "function" ? video.getVideoPlaybackQuality() : null;
      const now = performance.now();
      const window = recent.filter((r) => r[0] > now - 2000);
      const med = (/** @type {number[]} */ xs) =>
        xs.length ? [...xs].sort((a, b) => a - b)[xs.length >> 1] : null;
      const lat = med(window.map((r) => r[1]));
      const av = med(window.map((r) => r[2]));
      return {
        framesDecoded: q ? q.totalVideoFrames : 0,
        framesDropped: q ? q.droppedVideoFrames : 0,
        latencyMs: lat === null ? 0 : Math.max(0, Math.round(lat)),
        avOffsetMs: av === null ? null : Math.round(av * 10) / 10,
        stalls: counters.stalls,
        catchUps: counters.catchUps,
        lastCatchUpMs: null,
        skippedMs: Math.round(counters.skippedMs),
        speechSkippedMs: 0,
        audioUnderrunMs: 0,
        audioDecodedMs: null,
        anchorMs: null,
      };
    },
    report() {
      const q = typeof video.getVideoPlaybackQuality === "function" ? video.getVideoPlaybackQuality() : null;
      const dropped = q ? q.droppedVideoFrames : 0;
      const out = {
        frame_latency_ms: latencySamples,
        av_offset_ms: avSamples,
        presented_frames: counters.presented - reported.presented,
        dropped_frames: dropped - reported.dropped,
        stalls: counters.stalls - reported.stalls,
        stall_ms: Math.round(counters.stallMs - reported.stallMs),
        catch_ups: counters.catchUps - reported.catchUps,
        skipped_ms: Math.round(counters.skippedMs - reported.skippedMs),
        catch_up_ms: null,
        audio_underrun_ms: 0,
      };
      reported = { ...counters, dropped };
      latencySamples = [];
      avSamples = [];
      return out;
    },
    close() {
      closed = true;
      for (const [type, fn] of videoListeners) video.removeEventListener(type, fn);
      appendQueue.length = 0;
      if (mediaSource && mediaSource.readyState === "open") {
        try {
          mediaSource.endOfStream();
        } catch { /* already ended */ }
      }
    },
  };
}

/**
 * The http(s) origin of a ws(s) media URL (where the service serves the avatar's art).
 * @param {string} wsUrl
 */
function httpOrigin(wsUrl) {
  const u = new URL(wsUrl);
  u.protocol = u.protocol === "wss:" ? "https:" : "http:";
  return u.origin;
}
