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
 * // "@avatar-svc/sdk/player". `session` is what the app's backend handed over.
 * import { createPlayer } from "/sdk/player.js";
 * const player = createPlayer({
 *   video: document.querySelector("video"),
 *   mediaUrl: session.stream_metadata.media_url,
 *   clientToken: session.client_token,
 *   refreshToken: () => fetch(`/my-backend/sessions/${id}/token`, { method: "POST" }).then((r) => r.json()),
 *   onState: (s) => console.log(s.state, s.ttffMs),
 * });
 * // later: player.close();
 * ```
 *
 * Protocol: docs/media-plane.md.
 *
 * @module
 */

import { createWebRtcPlayer } from "./player_webrtc.js";

/** Subprotocol of the media WebSocket. */
export const MEDIA_SUBPROTOCOL = "avatar-media.v0";

/** Close codes after which the player does not reconnect. */
const FINAL_CLOSES = new Set([1000, 1003, 1011, 4403, 4404, 4429]);

/**
 * @typedef {"connecting" | "buffering" | "playing" | "reconnecting" | "ended" | "failed"} PlayerStateName
 */

/**
 * @typedef {object} PlayerState
 * @property {PlayerStateName} state
 * @property {number | null} ttffMs Time from `createPlayer` to the first decoded video frame.
 * @property {string} [reason] Why the player ended, failed or reconnects (a close reason or an error).
 * @property {number} [closeCode] The media WebSocket's close code, when it closed.
 * @property {boolean} muted Whether autoplay rules forced the video to start muted.
 * @property {boolean} microphone Whether the microphone is being streamed.
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
 * @property {() => Promise<{ clientToken: string; mediaUrl?: string; streamMetadata?: StreamMetadata }>} [refreshToken]
 *   Returns a fresh client token and `stream_metadata` (from your backend, which calls
 *   `POST /v1/sessions/{id}/client-token`); used to reconnect.
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
 * @property {() => void} close Disconnects and releases the microphone and the media resources.
 */

/**
 * Creates a player and connects it.
 *
 * @param {CreatePlayerOptions} options
 * @returns {AvatarPlayer}
 */
export function createPlayer(options) {
  if (options.streamMetadata?.sfu_endpoint) return createWebRtcPlayer(options);
  const video = options.video;
  const target = (options.targetLatencyMs ?? 200) / 1000;
  const maxLatency = (options.maxLatencyMs ?? 800) / 1000;
  const maxReconnects = options.maxReconnects ?? 5;
  const started = performance.now();
  let mediaUrl = options.mediaUrl ?? options.streamMetadata?.media_url ?? "";
  let token = options.clientToken;

  /** @type {PlayerState} */
  let current = { state: "connecting", ttffMs: null, muted: false, microphone: false };
  /** @type {WebSocket | null} */
  let ws = null;
  /** @type {MediaSource | null} */
  let mediaSource = null;
  /** @type {SourceBuffer | null} */
  let sourceBuffer = null;
  /** @type {string | null} */
  let objectUrl = null;
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

  /** @param {Partial<PlayerState>} patch */
  const setState = (patch) => {
    current = { ...current, ...patch };
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

  const startPlayback = () => {
    if (!video.paused) return;
    video.play().catch(() => {
      // Autoplay with sound was refused: start muted (the app can unmute on a click).
      video.muted = true;
      setState({ muted: true });
      video.play().catch(() => {});
    });
  };

  /** @param {string} mime */
  const setupMediaSource = (mime) => {
    if (mediaSource) return;
    if (!("MediaSource" in globalThis) || !MediaSource.isTypeSupported(mime)) {
      fail(`this browser cannot play ${mime}`);
      return;
    }
    mediaSource = new MediaSource();
    objectUrl = URL.createObjectURL(mediaSource);
    video.src = objectUrl;
    mediaSource.addEventListener("sourceopen", () => {
      if (!mediaSource || sourceBuffer) return;
      sourceBuffer = mediaSource.addSourceBuffer(mime);
      sourceBuffer.mode = "segments";
      sourceBuffer.addEventListener("updateend", () => {
        catchUp();
        if (current.state === "buffering" && liveEdge() !== null) startPlayback();
        pump();
      });
      pump();
    }, { once: true });
  };

  const watchFirstFrame = () => {
    const done = () => {
      if (current.ttffMs !== null) return;
      setState({ state: "playing", ttffMs: Math.round(performance.now() - started) });
    };
    const v =
      /** @type {HTMLVideoElement & { requestVideoFrameCallback?: (cb: () => void) => number }} */ (video);
    if (typeof v.requestVideoFrameCallback === "function") v.requestVideoFrameCallback(done);
    else video.addEventListener("playing", done, { once: true });
  };

  /** @param {string} reason */
  const fail = (reason) => {
    if (closed) return;
    teardown();
    setState({ state: "failed", reason });
  };

  const connect = () => {
    if (closed) return;
    const socket = new WebSocket(mediaUrl, [MEDIA_SUBPROTOCOL, `bearer.${token}`]);
    socket.binaryType = "arraybuffer";
    ws = socket;
    socket.onmessage = (e) => {
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
      onClose(e.code, e.reason);
    };
    socket.onerror = () => {};
  };

  /** @param {any} msg */
  const onControl = (msg) => {
    switch (msg?.type) {
      case "hello":
        inputSampleRate = Number(msg.input_sample_rate) || inputSampleRate;
        setupMediaSource(String(msg.mime));
        if (current.state === "connecting" || current.state === "reconnecting") {
          setState({ state: current.ttffMs === null ? "buffering" : "playing" });
        }
        if (micWanted && !mic) void startMic();
        break;
      case "interrupt": {
        // Barge-in: skip the avatar speech that is already buffered.
        const edge = liveEdge();
        if (edge !== null && edge - video.currentTime > target) video.currentTime = edge - target / 2;
        break;
      }
      case "transcript":
        options.onTranscript?.({ role: msg.role, turnId: msg.turn_id, text: msg.text, final: msg.final });
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
      setState({ state: "ended", closeCode: code, reason: reason || "session_ended" });
      return;
    }
    if (FINAL_CLOSES.has(code)) {
      teardown();
      setState({ state: "failed", closeCode: code, reason });
      return;
    }
    if (++failures > maxReconnects) {
      fail(`gave up after ${maxReconnects} reconnection attempts (${code} ${reason})`);
      return;
    }
    setState({ state: "reconnecting", closeCode: code, reason });
    if (code === 4401 && !options.refreshToken) {
      fail("the client token expired and no refreshToken callback was given");
      return;
    }
    if (options.refreshToken) {
      try {
        const fresh = await options.refreshToken();
        token = fresh.clientToken;
        const url = fresh.mediaUrl ?? fresh.streamMetadata?.media_url;
        if (url) mediaUrl = url;
      } catch (err) {
        fail(`could not refresh the client token: ${err}`);
        return;
      }
    }
    reconnects++;
    const delay = Math.min(4000, 250 * 2 ** (failures - 1));
    retryTimer = setTimeout(connect, delay);
  };

  const startMic = async () => {
    if (mic || closed) return;
    try {
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
      setState({ microphone: true });
    } catch (err) {
      micWanted = false;
      setState({ microphone: false, reason: `microphone unavailable: ${err}` });
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
    const socket = ws;
    ws = null;
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
    close: () => {
      if (closed) return;
      teardown();
      if (objectUrl) URL.revokeObjectURL(objectUrl);
      setState({ state: "ended", reason: "closed" });
    },
  };
}
