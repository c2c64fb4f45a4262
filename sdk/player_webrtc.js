// @ts-check
// @ts-self-types="./player_webrtc.d.ts"
/**
 * The browser player of the `webrtc_sfu` transport: the avatar over WebRTC through the service's SFU.
 *
 * `createPlayer` (`./player.js`) calls it when the session's `stream_metadata.transport` is `webrtc_sfu`,
 * so an app never has to know which transport the service chose: same options, same states, same stats. It
 * can also be used directly.
 *
 * How it works (protocol: docs/media-plane.md, "WebRTC through the SFU"): it opens the session's signalling
 * WebSocket (`sfu_endpoint`) with the session's `session_token`, answers the subscriber offer the service
 * relays from the SFU (the offer carries the SFU's ICE candidates, the answer none: `player_webrtc_sdp.js`),
 * plays the received tracks in the `<video>`, and publishes the microphone (audio only, echo cancellation on)
 * with its own offer. After an SFU restart the service sends a new offer (and `republish`): the player
 * replaces its PeerConnections. On an
 * unexpected close, or when ICE fails, it asks `refreshToken()` for fresh `stream_metadata` (a new
 * `session_token` and TURN credentials) and reconnects with backoff.
 *
 * Video-free (given a `canvas` instead of a `video`): the signalling socket asks for no video (`video=0`),
 * the sound plays from an `<audio>` element the player makes, and the avatar is drawn on the canvas
 * (`./avatar_canvas.js`) from the animation track, which arrives on a data channel the player opens
 * unordered and without retransmission (the latest state wins: a lost message is never waited for); see
 * `./player_webrtc_animation.js` for how its stamps are placed on the sound. Given a `video` in a browser that
 * cannot receive H.264 over WebRTC (`receivesH264`: a Firefox without OpenH264), it plays video-free all the
 * same, on a canvas of its own whose captured stream the `<video>` shows with the sound.
 *
 * @module
 */

import { createToolCalls } from "./tool_calls.js";
import { dtlsServer, receivesH264 } from "./player_webrtc_sdp.js";
import { createClockSync, startReporting } from "./player_report.js";
import { createAvatarDrawer } from "./avatar_canvas.js";
import { createAudioDelayMeter, nextVideoTarget } from "./player_webrtc_delay.js";
import {
  ANIMATION_CHANNEL_LABEL,
  ANIMATION_CHANNEL_OPTIONS,
  animationMessage,
  createSeenMessages,
  createStampMap,
  strip,
} from "./player_webrtc_animation.js";

/** Subprotocol of the SFU signalling WebSocket. */
export const SFU_SUBPROTOCOL = "avatar-sfu.v0";

/** Close codes after which the player does not reconnect. */
const FINAL_CLOSES = new Set([1000, 1003, 1011, 4403, 4404, 4429]);
/**
 * How long the player waits for the service's `started` (the SFU took its answer) before applying its own
 * answer anyway (a service that does not send it), ms.
 */
const START_WAIT_MS = 1000;
/**
 * How often the RTC statistics behind `stats()` and the sound's delay are refreshed, ms. Not a multiple of
 * 20: the decoded audio waiting (`./player_webrtc_delay.js`) is 0 or 10 ms by which half of a 20 ms packet's
 * output a read falls in, and reads 1,000 ms apart kept falling in the same half (runs of one value, 6 Dec:
 * a session's mean off by up to 5 ms); 1,010 ms apart they take the halves in turn.
 */
const STATS_PERIOD_MS = 1010;
/**
 * The video receiver's jitter buffer target (ms; `RTCRtpReceiver.jitterBufferTarget`, a floor under the
 * browser's own estimate). Left to itself, Chromium's video jitter buffer raised its target in steps during a
 * session (12.5 → 19 → 34 ms in 30 s on loopback) while the sound's stayed at 20 ms, so the mouth moved
 * across its sound by up to ~30 ms within a session. Sessions of `bench:player --paths webrtc_sfu
 * --realtime-engine --detail` (30 bursts each, 6 Dec, the family-25 VM), mouth vs sound \|p95\|; mean:
 * without a target 15.6–32.9; −9.9…+4.2 ms (5 sessions); 30 ms, 19.2; −5.1 (drifting −19 → +16: 1); 34 ms,
 * 9.4–13.5; −5.2…+2.7 (4); 40 ms, 11–27.5; +3.4…+18.4 (5, the picture 15 ms later); 50 ms, 20.7; +13.8 (1).
 * The sound's path is not touched (chunk → sound 109–124 ms p50 in all of them). Later the same day, twelve
 * sessions with 34 ms gave 8.6–24.6 (median ~17): the floor does not hold every session under 20 ms. Since
 * the service sends its silence as Opus DTX (6 Dec evening; docs/media-plane.md, SFU "Timing") the sound
 * waits 10–20 ms in its jitter buffer instead of 30–40, and 34 ms held the picture ~20 ms behind it: 24 ms
 * (four sessions of 20 bursts with 24 and 20, alternating: means −4.9…+0.2 and −7.6…−1.1, |p95| 7.3–11.4
 * and 7.2–19.3, one session with 20 drifting from +4 to −20; none with 24). The start value: the player moves
 * it when its picture and sound are more than 20 ms apart (`nextVideoTarget`, `./player_webrtc_delay.js`).
 */
const VIDEO_JITTER_TARGET_MS = 24;
/** Video-free: how long after a `requestAnimationFrame` callback its drawing is on screen (one refresh). */
const CANVAS_DISPLAY_MS = 16;
/** Drawn in the `<video>`: the size of the canvas it shows (the avatar's art is drawn at 512 × 512). */
const DRAWN_VIDEO_SIZE = 512;

/**
 * @typedef {import("./player.js").CreatePlayerOptions} CreatePlayerOptions
 * @typedef {import("./player.js").PlayerState} PlayerState
 * @typedef {import("./player.js").AvatarPlayer} AvatarPlayer
 * @typedef {import("./player.js").StreamMetadata} StreamMetadata
 */

/**
 * Creates a WebRTC player for a `webrtc_sfu` session and connects it.
 *
 * @param {CreatePlayerOptions} options `streamMetadata` (with `sfu_endpoint`, `session_token`, `ice_servers`) is required.
 * @returns {AvatarPlayer}
 */
export function createWebRtcPlayer(options) {
  const meta = options.streamMetadata;
  if (!meta?.sfu_endpoint) throw new TypeError("createWebRtcPlayer needs streamMetadata.sfu_endpoint");
  if (!options.canvas && (!options.video || typeof options.video.play !== "function")) {
    throw new TypeError("createPlayer: video must be a <video> element");
  }
  /**
   * A `<video>` in a browser that cannot receive the SFU's H.264 (`receivesH264`): the player draws the
   * avatar itself, video-free, on a canvas of its own that the `<video>` shows (its captured stream, with
   * the sound), instead of a picture that would never come.
   */
  const drawnCanvas = !options.canvas && !receivesH264() ? drawnVideoCanvas() : null;
  const drawnInVideo = drawnCanvas !== null;
  const canvas = options.canvas ?? drawnCanvas;
  /** Video-free: the sound over WebRTC, the animation track on a data channel, the avatar on `canvas`. */
  const videoFree = canvas !== null;
  // Video-free, the sound plays from an element of the player's own (or, drawn in the `<video>`, from it).
  const video = /** @type {HTMLVideoElement} */ (
    videoFree && !drawnInVideo ? document.createElement("audio") : options.video
  );
  /** Drawn in the `<video>`: the canvas's captured picture, put beside the sound in the element's stream. */
  const drawnTrack = drawnCanvas?.captureStream().getVideoTracks()[0] ?? null;
  const maxReconnects = options.maxReconnects ?? 5;
  const started = performance.now();
  /** @param {string} url */
  const withVideoParam = (url) => videoFree ? `${url}${url.includes("?") ? "&" : "?"}video=0` : url;
  let endpoint = withVideoParam(meta.sfu_endpoint);
  let token = meta.session_token;
  /** @type {RTCIceServer[]} */
  let iceServers = /** @type {RTCIceServer[]} */ (meta.ice_servers ?? []);

  /** @type {PlayerState} */
  let current = { state: "connecting", ttffMs: null, muted: false, microphone: false };
  /** @type {WebSocket | null} */
  let ws = null;
  /** @type {RTCPeerConnection | null} */
  let viewer = null;
  /** @type {RTCPeerConnection | null} */
  let publisher = null;
  /** @type {MediaStream | null} */
  let micStream = null;
  let micWanted = options.microphone ?? true;
  let closed = false;
  let failures = 0;
  /** The reason of the service's `{"type":"ended"}`, once received (the close that follows is final). */
  /** @type {string | null} */
  let endedReason = null;
  let reconnects = 0;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let retryTimer;
  const counters = { bytesReceived: 0, micFramesSent: 0, stalls: 0, stallMs: 0, presented: 0, dropped: 0 };
  /** The service's times from a frame made (or a sound due) to its RTP sent (from `clock_sync`). */
  const sendMs = { video: 0, audio: 0 };
  /** Recent presented frames: [shown, made → shown (null: a canvas drawing), mouth vs sound or null]. */
  /** @type {[number, number | null, number | null][]} */
  const recent = [];
  /** @type {number[]} */
  let latencySamples = [];
  /** @type {number[]} */
  let avSamples = [];
  /**
   * The audio path's delay after the service (jitter buffer, decoded audio waiting, playout, ms), from the
   * RTC statistics (`./player_webrtc_delay.js`).
   * @type {number | null}
   */
  let audioDelay = null;
  const audioDelayMeter = createAudioDelayMeter();
  /** The video receiver, whose jitter buffer target brings the picture back to its sound. */
  /** @type {RTCRtpReceiver | null} */
  let videoReceiver = null;
  /** When the target last moved (page ms): the pictures after it say where it put them. */
  let steeredAt = 0;
  let reported = { stalls: 0, stallMs: 0, presented: 0, dropped: 0 };
  let connectAt = started;
  /**
   * Resolves the wait of the answer being applied for the service's `started` (null: none waiting).
   * @type {((value?: unknown) => void) | null}
   */
  let awaitingStart = null;
  /** @type {number | null} */
  let connectionFirstFrameMs = null;
  let firstFrameReported = false;
  let bytesBefore = 0;
  let micBefore = 0;
  let animationMessages = 0;
  let unreliableMessages = 0;
  /** Video-free: where the data channel's stamps fall on the sound (see `./player_webrtc_animation.js`). */
  const stamps = createStampMap();
  const avatar = videoFree
    ? createAvatarDrawer({
      canvas: /** @type {HTMLCanvasElement} */ (canvas),
      origin: httpOrigin(meta.sfu_endpoint),
      token: () => token ?? "",
    })
    : null;

  /** @param {Partial<PlayerState>} patch */
  const setState = (patch) => {
    current = { ...current, ...patch };
    try {
      options.onState?.({ ...current });
    } catch (err) {
      console.error("onState handler failed", err);
    }
  };

  /** @param {Record<string, unknown>} msg */
  const send = (msg) => {
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(msg));
  };
  const toolCalls = createToolCalls({ onToolCall: options.onToolCall, socket: () => ws });

  const peer = () =>
    new RTCPeerConnection({
      iceServers,
      ...(options.iceTransportPolicy ? { iceTransportPolicy: options.iceTransportPolicy } : {}),
    });

  const startPlayback = () => {
    if (!video.paused) return;
    video.play().catch(() => {
      // Autoplay with sound was refused: start muted (the app can unmute on a click).
      video.muted = true;
      setState({ muted: true });
      video.play().catch(() => {});
    });
  };

  /**
   * Each shown frame: made → shown (the service's part, made → sent, plus this page's, received → shown;
   * the SFU hop between is not counted), and its picture against its sound (the audio path's delay from the
   * RTC statistics); the first one is the time to first frame. Drawn in the `<video>`: the first picture the
   * element shows (of the player, and of each connection), what the user sees.
   */
  const watchFrames = () => {
    const v =
      /** @type {HTMLVideoElement & { requestVideoFrameCallback?: (cb: (now: number, md: any) => void) => number }} */ (video);
    const first = (/** @type {number} */ at) => {
      connectionFirstFrameMs ??= Math.max(0, Math.round(at - connectAt));
      if (current.ttffMs !== null || closed) return;
      setState({ state: "playing", ttffMs: Math.round(at - started) });
    };
    if (typeof v.requestVideoFrameCallback !== "function") {
      video.addEventListener("playing", () => first(performance.now()), { once: true });
      return;
    }
    /** @param {number} now @param {any} md */
    const onFrame = (now, md) => {
      if (closed) return;
      const shown = md.expectedDisplayTime ?? now;
      first(shown);
      // (drawn in the `<video>`, its pictures are the canvas's, counted and measured where they are drawn)
      if (drawnInVideo) {
        /** @type {any} */ (v).requestVideoFrameCallback(onFrame);
        return;
      }
      counters.presented++;
      if (typeof md.receiveTime === "number" && md.receiveTime > 0) {
        const latency = sendMs.video + (shown - md.receiveTime);
        const av = audioDelay === null ? null : latency - (sendMs.audio + audioDelay);
        if (latencySamples.length < 200) latencySamples.push(Math.round(latency * 10) / 10);
        if (av !== null && avSamples.length < 200) avSamples.push(Math.round(av * 10) / 10);
        recent.push([shown, latency, av]);
        if (recent.length > 75) recent.shift();
      }
      /** @type {any} */ (v).requestVideoFrameCallback(onFrame);
    };
    v.requestVideoFrameCallback(onFrame);
  };

  /** @param {string} sdp */
  const onOffer = async (sdp) => {
    const old = viewer;
    const pc = peer();
    viewer = pc;
    old?.close();
    bytesBefore = counters.bytesReceived; // counters survive a PeerConnection being replaced
    audioDelayMeter.reset();
    videoReceiver = null; // (the new connection's, once its track comes)
    // (drawn in the `<video>`: the canvas's picture, then the sound, whose track starts the element)
    const stream = new MediaStream(drawnTrack ? [drawnTrack] : []);
    pc.ontrack = (e) => {
      if (e.track.kind === "video" && "jitterBufferTarget" in e.receiver) {
        e.receiver.jitterBufferTarget = VIDEO_JITTER_TARGET_MS;
        videoReceiver = e.receiver;
        steeredAt = performance.now();
      }
      stream.addTrack(e.track);
      if (video.srcObject !== stream) {
        video.srcObject = stream;
        // (a canvas's stream gives a picture when the canvas is painted: the one drawn so far, now)
        /** @type {any} */ (drawnTrack)?.requestFrame?.();
      }
      startPlayback();
    };
    pc.onconnectionstatechange = () => {
      if (viewer === pc && pc.connectionState === "failed") dropAndReconnect("ice_failed");
    };
    await pc.setRemoteDescription({ type: "offer", sdp });
    if (videoFree) openAnimationChannel(pc);
    const answer = /** @type {RTCSessionDescriptionInit} */ ({
      type: "answer",
      sdp: dtlsServer(String((await pc.createAnswer()).sdp)),
    });
    if (viewer !== pc || closed) return;
    // The answer goes out before this side's candidates are gathered or its ICE starts (see `started`).
    const wait = Promise.withResolvers();
    const timer = setTimeout(wait.resolve, START_WAIT_MS);
    awaitingStart = wait.resolve;
    send({ type: "answer", sdp: answer.sdp });
    await wait.promise;
    clearTimeout(timer);
    if (awaitingStart === wait.resolve) awaitingStart = null;
    if (viewer !== pc || closed) return;
    await pc.setLocalDescription(answer);
    if (current.state === "connecting" || current.state === "reconnecting") {
      setState({ state: current.ttffMs === null ? "buffering" : "playing" });
    }
  };

  /**
   * Video-free: the animation track's data channel. The player opens it (before its answer, so it is open
   * when the SFU's first message comes) unordered and without retransmission; the SFU sends on the channel
   * of its own label with the reliability the opener chose. Should the SFU open one itself (a message sent
   * before ours arrived), that one is read too.
   * @param {RTCPeerConnection} pc
   */
  const openAnimationChannel = (pc) => {
    const seen = createSeenMessages();
    /** @param {RTCDataChannel} ch */
    const read = (ch) => {
      ch.binaryType = "arraybuffer";
      ch.onmessage = (e) => {
        if (viewer !== pc) return;
        const arrivedAt = performance.now();
        let msg;
        try {
          msg = JSON.parse(typeof e.data === "string" ? e.data : new TextDecoder().decode(e.data));
        } catch {
          return;
        }
        if (!animationMessage(msg)) return;
        animationMessages++;
        if (!ch.ordered || ch.maxRetransmits === 0) unreliableMessages++;
        // Each datagram carries the messages sent before it (`prev`) and may be a repeat: each message is
        // applied once; only a first send that arrived times the stamp map (a copy comes later than its
        // stamp's sound).
        if (!seen.has(msg)) {
          if (msg.repeat !== true) stamps.arrived(msg.t_ms, arrivedAt);
          avatar?.push(strip(msg));
        }
        for (const p of Array.isArray(msg.prev) ? msg.prev : []) {
          if (animationMessage(p) && !seen.has(p)) avatar?.push(strip(p));
        }
      };
    };
    const ch = pc.createDataChannel(ANIMATION_CHANNEL_LABEL, ANIMATION_CHANNEL_OPTIONS);
    read(ch);
    // A first message makes the SFU take the channel as open, and only then as unordered.
    ch.onopen = () => ch.send(JSON.stringify({ type: "animation_channel" }));
    pc.ondatachannel = (e) => read(e.channel);
  };

  const publish = async () => {
    if (closed || !micWanted) return;
    try {
      micStream ??= await navigator.mediaDevices.getUserMedia({
        audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true, autoGainControl: true },
      });
    } catch (err) {
      micWanted = false;
      setState({ microphone: false, reason: `microphone unavailable: ${err}` });
      return;
    }
    if (closed || !micWanted) return;
    publisher?.close();
    micBefore = counters.micFramesSent;
    const pc = peer();
    publisher = pc;
    for (const track of micStream.getAudioTracks()) pc.addTransceiver(track, { direction: "sendonly" });
    await pc.setLocalDescription(await pc.createOffer());
    if (publisher !== pc || closed) return;
    send({ type: "publish", sdp: /** @type {RTCSessionDescription} */ (pc.localDescription).sdp });
  };

  const unpublish = () => {
    publisher?.close();
    publisher = null;
    micStream?.getTracks().forEach((t) => t.stop());
    micStream = null;
    send({ type: "unpublish" });
    if (!closed) setState({ microphone: false });
  };

  /** @param {any} msg */
  const onControl = async (msg) => {
    switch (msg?.type) {
      case "hello":
        clockSync.start();
        if (avatar && msg.animation) avatar.configure(msg.animation);
        if (micWanted) void publish().catch((err) => setState({ reason: `microphone: ${err}` }));
        break;
      case "clock_sync":
        clockSync.receive(msg, performance.now());
        if (typeof msg.send_ms?.video === "number") sendMs.video = msg.send_ms.video;
        if (typeof msg.send_ms?.audio === "number") sendMs.audio = msg.send_ms.audio;
        break;
      case "started":
        awaitingStart?.();
        awaitingStart = null;
        break;
      case "offer":
        await onOffer(String(msg.sdp)).catch((err) => dropAndReconnect(`negotiation failed: ${err}`));
        break;
      case "answer":
        if (publisher) {
          await publisher.setRemoteDescription({ type: "answer", sdp: String(msg.sdp) }).then(
            () => setState({ microphone: true }),
            (err) => setState({ reason: `microphone: ${err}` }),
          );
        }
        break;
      case "republish":
        if (micWanted) void publish().catch(() => {});
        break;
      case "interrupt":
        // Barge-in: the visemes after the cut go (the SFU sends no more of them; the sound stops).
        if (avatar && typeof msg.t_ms === "number") avatar.interrupt(msg.t_ms);
        break;
      case "face":
      case "head":
        // The state when joining (over the signalling socket: not a stamp of the sound's path).
        if (typeof msg.t_ms === "number") avatar?.push(msg);
        break;
      case "transcript":
        options.onTranscript?.({ role: msg.role, turnId: msg.turn_id, text: msg.text, final: msg.final });
        break;
      case "tool_call":
        toolCalls.handle(msg);
        break;
      case "error":
        setState({ reason: String(msg.code ?? "error") });
        break;
      case "ended":
        endedReason = String(msg.reason ?? "session_ended");
        setState({ reason: endedReason });
        break;
    }
  };

  const connect = () => {
    if (closed) return;
    const socket = new WebSocket(endpoint, [SFU_SUBPROTOCOL, `bearer.${token}`]);
    ws = socket;
    connectAt = performance.now();
    connectionFirstFrameMs = null;
    firstFrameReported = false;
    socket.onmessage = (e) => {
      if (typeof e.data !== "string") return;
      let msg;
      try {
        msg = JSON.parse(e.data);
      } catch {
        return;
      }
      failures = 0;
      void onControl(msg);
    };
    socket.onclose = (e) => {
      if (ws !== socket) return;
      ws = null;
      void onClose(e.code, e.reason);
    };
    socket.onerror = () => {};
  };

  /** Drops the connection (ICE failed, negotiation broke) and reconnects as after an unexpected close. */
  /** @param {string} reason */
  const dropAndReconnect = (reason) => {
    if (closed) return;
    const socket = ws;
    ws = null;
    if (socket && socket.readyState <= WebSocket.OPEN) socket.close(4000, "reconnect");
    void onClose(4000, reason);
  };

  /**
   * @param {number} code
   * @param {string} reason
   */
  const onClose = async (code, reason) => {
    if (closed) return;
    viewer?.close();
    viewer = null;
    publisher?.close();
    publisher = null;
    // After the service's `ended` the session is over, whatever the close says (its close frame can be
    // lost: see ./player.js).
    if (code === 1000 || endedReason === "session_ended") {
      teardown();
      setState({ state: "ended", closeCode: code, reason: reason || "session_ended" });
      return;
    }
    if (FINAL_CLOSES.has(code) || endedReason !== null) {
      teardown();
      setState({ state: "failed", closeCode: code, reason: reason || endedReason || "" });
      return;
    }
    if (++failures > maxReconnects) {
      teardown();
      setState({
        state: "failed",
        reason: `gave up after ${maxReconnects} reconnection attempts (${code} ${reason})`,
      });
      return;
    }
    setState({ state: "reconnecting", closeCode: code, reason });
    if (options.refreshToken) {
      try {
        const fresh = await options.refreshToken();
        const m = fresh.streamMetadata;
        if (m?.session_token) token = m.session_token;
        if (m?.sfu_endpoint) endpoint = withVideoParam(m.sfu_endpoint);
        if (m?.ice_servers) iceServers = /** @type {RTCIceServer[]} */ (m.ice_servers);
      } catch (err) {
        teardown();
        setState({ state: "failed", reason: `could not refresh the session token: ${err}` });
        return;
      }
    } else if (code === 4401) {
      teardown();
      setState({
        state: "failed",
        reason: "the session token expired and no refreshToken callback was given",
      });
      return;
    }
    if (closed) return;
    reconnects++;
    const delay = Math.min(4000, 250 * 2 ** (failures - 1));
    retryTimer = setTimeout(connect, delay);
  };

  /** @type {Record<string, number>} */
  let prev = {};
  const pollStats = async () => {
    try {
      if (viewer) {
        let bytes = 0;
        /** @type {Record<string, number>} */
        const now = {};
        let audio = null, playout = null;
        for (const s of (await viewer.getStats()).values()) {
          if (s.type === "inbound-rtp") {
            bytes += s.bytesReceived ?? 0;
            if (s.kind === "video") {
              now.freezes = s.freezeCount ?? 0;
              now.freezeMs = (s.totalFreezesDuration ?? 0) * 1000;
              now.videoDropped = s.framesDropped ?? 0;
            } else if (s.kind === "audio") {
              audio = s;
            }
          } else if (s.type === "media-playout") {
            playout = s;
          }
        }
        counters.bytesReceived = bytesBefore + bytes;
        const d = (/** @type {string} */ k) => (now[k] ?? 0) - (prev[k] ?? 0);
        // The sound's delay after arriving: its jitter buffer, its decoded audio waiting, its playout.
        const delay = audio ? audioDelayMeter.update(audio, playout) : null;
        if (delay !== null) audioDelay = delay;
        steerVideo();
        if (d("freezes") > 0) {
          counters.stalls += d("freezes");
          counters.stallMs += d("freezeMs");
        }
        if (d("videoDropped") > 0) counters.dropped += d("videoDropped");
        prev = now;
      }
      if (publisher) {
        let sent = 0;
        for (const s of (await publisher.getStats()).values()) {
          if (s.type === "outbound-rtp") sent += s.packetsSent ?? 0;
        }
        counters.micFramesSent = micBefore + sent;
      }
    } catch { /* a PeerConnection closed meanwhile */ }
  };
  /** Video: the picture brought back to its sound when they are far apart (`nextVideoTarget`). */
  const steerVideo = () => {
    if (!videoReceiver || audioDelay === null) return;
    // (a picture shown within 200 ms of the last step may still be on the old target)
    const since = steeredAt + 200;
    const offsets = recent.flatMap((r) => (r[0] > since && r[2] !== null ? [r[2]] : []));
    const receiver = /** @type {any} */ (videoReceiver);
    const current = receiver.jitterBufferTarget ?? VIDEO_JITTER_TARGET_MS;
    const next = nextVideoTarget(current, offsets);
    if (next === current) return;
    receiver.jitterBufferTarget = next;
    steeredAt = performance.now();
  };
  const statsTimer = setInterval(() => void pollStats(), STATS_PERIOD_MS);
  /** Where the session's media clock is on the page's clock (answers also carry the service's send times). */
  const clockSync = createClockSync((/** @type {string} */ text) => {
    if (!ws || ws.readyState !== WebSocket.OPEN) return false;
    ws.send(text);
    return true;
  });
  // What the player measured goes to the service every couple of seconds.
  const stopReporting = startReporting({
    playback: "webrtc",
    build: () => {
      const out = {
        ...(connectionFirstFrameMs !== null && !firstFrameReported
          ? { first_frame_ms: connectionFirstFrameMs }
          : {}),
        frame_latency_ms: latencySamples,
        av_offset_ms: avSamples,
        presented_frames: counters.presented - reported.presented,
        dropped_frames: counters.dropped - reported.dropped,
        stalls: counters.stalls - reported.stalls,
        stall_ms: Math.round(counters.stallMs - reported.stallMs),
        catch_ups: 0,
        skipped_ms: 0,
        catch_up_ms: null,
        audio_underrun_ms: 0,
      };
      if (connectionFirstFrameMs !== null) firstFrameReported = true;
      reported = {
        stalls: counters.stalls,
        stallMs: counters.stallMs,
        presented: counters.presented,
        dropped: counters.dropped,
      };
      latencySamples = [];
      avSamples = [];
      return out;
    },
    send: (/** @type {string} */ text) => {
      if (!ws || ws.readyState !== WebSocket.OPEN) return false;
      ws.send(text);
      return true;
    },
  });

  const teardown = () => {
    stopReporting();
    clockSync.stop();
    closed = true;
    clearTimeout(retryTimer);
    clearInterval(statsTimer);
    const socket = ws;
    ws = null;
    if (socket && socket.readyState <= WebSocket.OPEN) socket.close(1000);
    viewer?.close();
    viewer = null;
    publisher?.close();
    publisher = null;
    micStream?.getTracks().forEach((t) => t.stop());
    micStream = null;
    cancelAnimationFrame(drawRaf);
    avatar?.close();
    drawnTrack?.stop();
    if (videoFree) video.srcObject = null;
  };

  /** Video-free: the avatar drawn at the instant of the sound heard when the drawing is on screen. */
  let drawRaf = 0;
  /** The instant of the picture drawn in the previous animation frame (on screen from this one's start). */
  /** @type {number | null} */
  let drawnInstant = null;
  const drawLoop = (/** @type {number} */ frameTime) => {
    if (closed || !avatar) return;
    // A picture drawn in an animation frame is on screen by the next one's start: measured as a video frame
    // is (`av_offset_ms`, presented frames), against the sound of its instant as the stamps place it.
    if (drawnInstant !== null) canvasShown(drawnInstant, frameTime);
    drawnInstant = null;
    const t = stamps.heardAt(performance.now() + CANVAS_DISPLAY_MS, audioDelay);
    // Before the data channel's first stamp (its DTLS and SCTP take a few round trips more than the hello),
    // the avatar at rest: its art came with the hello, and no stamp is before the timeline's start.
    if (t !== null || drawnAt === null) {
      const before = avatar.stats().frames;
      if (avatar.draw(t ?? 0)) {
        drawnAt ??= performance.now();
        // (drawn in the `<video>`, the first picture is the element's: `watchFrames`)
        if (current.ttffMs === null && !drawnInVideo) {
          connectionFirstFrameMs ??= Math.max(0, Math.round(drawnAt - connectAt));
          setState({ state: "playing", ttffMs: Math.round(drawnAt - started) });
        }
      }
      if (t !== null && avatar.stats().frames > before) drawnInstant = t;
    }
    drawRaf = requestAnimationFrame(drawLoop);
  };
  /** @type {number | null} */
  let drawnAt = null;
  /**
   * Video-free: the drawing of timeline instant `instant` was on screen at page time `shownAt`; its offset
   * against the sound of that instant, heard when the stamps and the sound's delay from the RTC statistics
   * now say (+: the picture is late).
   * @param {number} instant
   * @param {number} shownAt
   */
  const canvasShown = (instant, shownAt) => {
    counters.presented++;
    const delay = stamps.delay(audioDelay);
    if (delay === null) return;
    const av = shownAt - (instant + delay);
    if (avSamples.length < 200) avSamples.push(Math.round(av * 10) / 10);
    recent.push([shownAt, null, av]);
    if (recent.length > 75) recent.shift();
  };

  video.playsInline = true;
  if (videoFree) drawRaf = requestAnimationFrame(drawLoop);
  if (!videoFree || drawnInVideo) watchFrames();
  setState({ state: "connecting" });
  connect();

  return {
    state: () => ({ ...current }),
    stats: () => {
      const q = typeof video.getVideoPlaybackQuality === "function" ? video.getVideoPlaybackQuality() : null;
      const now = performance.now();
      const window = recent.filter((r) => r[0] > now - 2000);
      const med = (/** @type {number[]} */ xs) =>
        xs.length ? [...xs].sort((a, b) => a - b)[xs.length >> 1] : null;
      const lat = med(window.flatMap((r) => (r[1] === null ? [] : [r[1]])));
      const av = med(window.flatMap((r) => (r[2] === null ? [] : [r[2]])));
      return {
        framesDecoded: q ? q.totalVideoFrames : 0,
        framesDropped: q ? q.droppedVideoFrames : 0,
        latencyMs: lat === null ? 0 : Math.round(lat),
        avOffsetMs: av === null ? null : Math.round(av * 10) / 10,
        stalls: counters.stalls,
        catchUps: 0,
        lastCatchUpMs: null,
        skippedMs: 0,
        speechSkippedMs: 0,
        audioUnderrunMs: 0,
        audioDecodedMs: null,
        anchorMs: null,
        playback: /** @type {"webrtc"} */ ("webrtc"),
        bytesReceived: counters.bytesReceived,
        micFramesSent: counters.micFramesSent,
        reconnects,
        ...(avatar
          ? {
            framesDecoded: avatar.stats().frames,
            animation: {
              messages: animationMessages,
              unreliable: unreliableMessages,
              stampToHeardMs: stamps.delay(audioDelay),
              heardNow: stamps.heardAt(performance.now(), audioDelay),
            },
          }
          : {}),
      };
    },
    setMicrophone: async (/** @type {boolean} */ on) => {
      micWanted = on;
      if (on) await publish();
      else unpublish();
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

/** Drawn in the `<video>`: the player's own canvas, in no document. */
function drawnVideoCanvas() {
  const c = document.createElement("canvas");
  c.width = DRAWN_VIDEO_SIZE;
  c.height = DRAWN_VIDEO_SIZE;
  return c;
}

/**
 * The http(s) origin of a ws(s) URL (where the art is served).
 * @param {string} wsUrl
 */
function httpOrigin(wsUrl) {
  const u = new URL(wsUrl);
  u.protocol = u.protocol === "wss:" ? "https:" : "http:";
  return u.origin;
}
