// @ts-check
// @ts-self-types="./player.d.ts"
/**
 * The browser player of the avatar session service's media plane: `websocket_fmp4` here, `webrtc_sfu` in
 * `./player_webrtc.js` (chosen from `streamMetadata`: the caller does not care which transport it got).
 *
 * It connects to a session's media WebSocket with the session's client token, plays the fragmented MP4
 * stream (H.264 + Opus) through Media Source Extensions in a `<video>`, streams the microphone to the
 * conversation engine, reports its state and time to first frame, and asks the app for a fresh token
 * when it has to reconnect. It holds no API key: the app's backend creates the session and hands the
 * browser only `client_token` and `stream_metadata.media_url`.
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

/** Close codes after which the player does not reconnect. */
const FINAL_CLOSES = new Set([1000, 1003, 1011, 4403, 4404, 4429]);

import { createWebRtcPlayer } from "./player_webrtc.js";
import { createToolCalls } from "./tool_calls.js";

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
 * @property {string} [session_token]
 * @property {{ urls: string | string[]; username?: string; credential?: string }[]} [ice_servers]
 */

/**
 * @typedef {object} CreatePlayerOptions
 * @property {HTMLVideoElement} video The element to play in.
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
 * @property {number} [targetLatencyMs] Playback delay behind the live edge to aim for (default 200).
 * @property {number} [maxLatencyMs] Past this delay the player jumps back to the live edge (default 800).
 * @property {number} [maxReconnects] Reconnection attempts in a row before failing (default 5).
 */

/**
 * @typedef {object} PlayerStats
 * @property {number} framesDecoded
 * @property {number} framesDropped
 * @property {number} latencyMs Current delay behind the live edge.
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
  if (options?.streamMetadata?.sfu_endpoint) return createWebRtcPlayer(options);
  checkOptions(options);
  return createFmp4Player(options);
}

/** @param {CreatePlayerOptions} options */
function checkOptions(options) {
  if (options === null || typeof options !== "object") {
    throw new TypeError("createPlayer: options must be an object");
  }
  const video = /** @type {unknown} */ (options.video);
  if (!video || typeof video !== "object" || typeof (/** @type {any} */ (video)).play !== "function") {
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
 * The `websocket_fmp4` player: the media WebSocket, Media Source Extensions and the microphone.
 *
 * How it decides it is playing: the state goes to `playing` only on the element's `playing` event while
 * connected, and back to `buffering` when the element waits for data or is paused. Playback is (re)started
 * whenever media is buffered and the element is paused, after every append, so no ordering of the
 * browser's events (first frame, `updateend`, `canplay`) can leave a paused element behind a `playing`
 * state.
 *
 * @param {CreatePlayerOptions} options
 * @returns {AvatarPlayer}
 */
function createFmp4Player(options) {
  const video = options.video;
  const target = (options.targetLatencyMs ?? 200) / 1000;
  const maxLatency = (options.maxLatencyMs ?? 800) / 1000;
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
  /** @type {MediaSource | null} */
  let mediaSource = null;
  /** @type {SourceBuffer | null} */
  let sourceBuffer = null;
  /** @type {ArrayBuffer[]} */
  const appendQueue = [];
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
  let lastTrim = 0;
  const toolCalls = createToolCalls({ onToolCall: options.onToolCall, socket: () => ws });
  /** When the first video frame was presented (requestVideoFrameCallback), if the browser says. */
  /** @type {number | null} */
  let firstFrameAt = null;
  let playPending = false;

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

  const liveEdge = () => {
    const b = sourceBuffer?.buffered;
    return b && b.length ? b.end(b.length - 1) : null;
  };

  const catchUp = () => {
    const edge = liveEdge();
    if (edge === null) return;
    const b = /** @type {SourceBuffer} */ (sourceBuffer).buffered;
    const start = b.start(b.length - 1);
    // Jump to the live edge when far behind, or when stuck before the newest buffered range (a gap).
    if (edge - video.currentTime > maxLatency || video.currentTime < start) {
      video.currentTime = Math.max(start, edge - target);
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
        setState({ muted: true });
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
        fail(`append failed: ${err}`);
      }
    }
  };

  /** @param {string} mime */
  const setupMediaSource = (mime) => {
    if (mediaSource) return;
    if (!("MediaSource" in globalThis) || !MediaSource.isTypeSupported(mime)) {
      fail(`this browser cannot play ${mime}`);
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

  // The element's own events decide `playing` / `buffering`.
  const onPlaying = () => {
    if (closed || !connected || current.state === "playing") return;
    const ttffMs = current.ttffMs ?? Math.round((firstFrameAt ?? performance.now()) - started);
    setState({ state: "playing", ttffMs, reason: undefined, closeCode: undefined });
  };
  const onStalled = () => {
    if (closed || current.state !== "playing") return;
    setState({ state: "buffering" });
  };
  const onCanPlay = () => startPlayback();
  /** @type {[string, () => void][]} */
  const videoListeners = [["playing", onPlaying], ["waiting", onStalled], ["pause", onStalled], [
    "canplay",
    onCanPlay,
  ]];
  for (const [type, fn] of videoListeners) video.addEventListener(type, fn);

  const watchFirstFrame = () => {
    const v =
      /** @type {HTMLVideoElement & { requestVideoFrameCallback?: (cb: () => void) => number }} */ (video);
    if (typeof v.requestVideoFrameCallback === "function") {
      v.requestVideoFrameCallback(() => {
        firstFrameAt ??= performance.now();
      });
    }
  };

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
    const socket = new WebSocket(mediaUrl, [MEDIA_SUBPROTOCOL, `bearer.${token}`]);
    socket.binaryType = "arraybuffer";
    ws = socket;
    socket.onmessage = (e) => {
      if (ws !== socket) return;
      if (typeof e.data === "string") {
        let msg;
        try {
          msg = JSON.parse(e.data);
        } catch {
          return;
        }
        onControl(msg);
        return;
      }
      bytesReceived += e.data.byteLength;
      failures = 0;
      appendQueue.push(e.data);
      pump();
    };
    socket.onclose = (e) => {
      if (ws !== socket) return;
      ws = null;
      connected = false;
      void onClose(e.code, e.reason);
    };
    socket.onerror = () => {};
  };

  /** @param {any} msg */
  const onControl = (msg) => {
    switch (msg?.type) {
      case "hello": {
        inputSampleRate = Number(msg.input_sample_rate) || inputSampleRate;
        connected = true;
        setupMediaSource(String(msg.mime));
        if (closed) return;
        // Connected (again): the stale close reason goes. `playing` comes from the element itself; after a
        // reconnection the element may still be playing what it had buffered.
        const playingNow = !video.paused && video.readyState >= 3 && current.ttffMs !== null;
        setState({ state: playingNow ? "playing" : "buffering", reason: undefined, closeCode: undefined });
        startPlayback();
        if (micWanted && !mic) void startMic();
        break;
      }
      case "interrupt": {
        // Barge-in: skip the avatar speech that is already buffered.
        const edge = liveEdge();
        if (edge !== null && edge - video.currentTime > target) video.currentTime = edge - target / 2;
        break;
      }
      case "transcript":
        options.onTranscript?.({ role: msg.role, turnId: msg.turn_id, text: msg.text, final: msg.final });
        break;
      case "tool_call":
        toolCalls.handle(msg);
        break;
      case "ended":
        setState({ reason: String(msg.reason ?? "session_ended") });
        break;
    }
  };

  /**
   * @param {number} code
   * @param {string} reason
   */
  const onClose = async (code, reason) => {
    if (closed) return;
    if (code === 1000) {
      teardown();
      setState({ state: "ended", closeCode: code, reason: reason || current.reason || "session_ended" });
      return;
    }
    if (FINAL_CLOSES.has(code)) {
      teardown();
      setState({ state: "failed", closeCode: code, reason });
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
      const sink = ctx.createGain();
      sink.gain.value = 0;
      ctx.createMediaStreamSource(stream).connect(node).connect(sink).connect(ctx.destination);
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

  const teardown = () => {
    clearTimeout(retryTimer);
    stopMic();
    for (const [type, fn] of videoListeners) video.removeEventListener(type, fn);
    const socket = ws;
    ws = null;
    connected = false;
    if (socket && socket.readyState <= WebSocket.OPEN) socket.close(1000);
    appendQueue.length = 0;
    if (mediaSource && mediaSource.readyState === "open") {
      try {
        mediaSource.endOfStream();
      } catch { /* already ended */ }
    }
    closed = true;
  };

  video.playsInline = true;
  watchFirstFrame();
  setState({ state: "connecting" });
  connect();

  return {
    state: () => ({ ...current }),
    stats: () => {
      const q = typeof video.getVideoPlaybackQuality === "function" ? video.getVideoPlaybackQuality() : null;
      const edge = liveEdge();
      return {
        framesDecoded: q ? q.totalVideoFrames : 0,
        framesDropped: q ? q.droppedVideoFrames : 0,
        latencyMs: edge === null ? 0 : Math.max(0, Math.round((edge - video.currentTime) * 1000)),
        bytesReceived,
        micFramesSent,
        reconnects,
      };
    },
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
