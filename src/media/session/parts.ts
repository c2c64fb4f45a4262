/**
 * Builds one session's media parts from its dependencies and wires them to one another (the clock to
 * what it drives, the animation track and the audio playout to the fan-out, the frames to all three); the
 * session (`../session_media.ts`) keeps them and routes the engine's events to them. Kept apart so the
 * session class holds only the routing, the start and the stop.
 *
 * @module
 */
import { AUDIO_RATE } from "../ffmpeg.ts";
import { LOOKAHEAD_MS } from "../lipsync/viseme_engine.ts";
import type { RenderSession } from "../renderer.ts";
import type { StreamConfig } from "../transports/transport.ts";
import { AnimationTrack } from "./animation_track.ts";
import { AudioPlayout } from "./audio_playout.ts";
import { MediaFanout } from "./fanout.ts";
import { MediaClock } from "./media_clock.ts";
import type { SessionMediaDeps } from "./session_types.ts";
import { VideoFrames } from "./video_frames.ts";

/** One session's media parts, each with one owner. */
export interface SessionParts {
  render: RenderSession;
  clock: MediaClock;
  fanout: MediaFanout;
  track: AnimationTrack;
  playout: AudioPlayout;
  frames: VideoFrames;
}

/** What the parts call back into the session. */
export interface PartsHooks {
  /** A frame was encoded (`count`: how many so far). */
  encoded(count: number): void;
  /** A part failed (an encoder, a render, the encoder's output). */
  fail(reason: string): void;
}

/** Builds and wires a session's parts. */
export function buildParts(deps: SessionMediaDeps, hooks: PartsHooks): SessionParts {
  const { fps, width, height } = deps.renderer.format;
  const seed = hashSeed(deps.sessionId);
  const clock = new MediaClock(fps, deps.wakeUps);
  const render = deps.renderer.open({ avatarId: deps.avatarId, bgId: deps.bgId, seed });
  const fanout: MediaFanout = new MediaFanout((avcC): StreamConfig => ({
    width,
    height,
    fps,
    avcC,
    opus: playout.opus,
    inputSampleRate: deps.connection.inputSampleRate,
    timelineMs: () => performance.now() - clock.t0,
    avatar: {
      avatarId: deps.avatarId,
      bgId: deps.bgId,
      seed,
      art: deps.art ?? null,
      mouth: deps.mouth ?? null,
    },
  }));
  const track: AnimationTrack = new AnimationTrack(
    {
      engineRate: deps.connection.outputSampleRate,
      timelineRate: AUDIO_RATE,
      inputRate: deps.connection.inputSampleRate,
      seed,
      g2p: deps.lipSync?.g2p,
      lang: deps.lipSync?.lang,
      now: () => performance.now() - clock.t0,
    },
    clock.frameMs,
    fanout,
  );
  const playout: AudioPlayout = new AudioPlayout({
    clock,
    face: track.face,
    clients: () => fanout.clients,
    paced: deps.paced ?? false,
    engineRate: deps.connection.outputSampleRate,
    // Speech held back at the start of a response for lip sync's look-ahead, samples at 48 kHz.
    hold: Math.round(Math.min(LOOKAHEAD_MS, Math.max(0, deps.lipSync?.holdMs ?? 0)) * AUDIO_RATE / 1000),
    bitrate: deps.audioBitrate,
    backend: deps.audioEncoder,
    packet: (p) => fanout.audio(p),
    unsentFrom: () => fanout.audioUnsentFrom(),
    retract: (pts) => fanout.retractAudio(pts),
    reportPlayed: (id, ms, interrupted) => {
      try {
        deps.connection.reportPlayed(id, ms, interrupted);
      } catch { /* the engine connection is closing */ }
    },
    metrics: deps.metrics,
    observer: deps.observer,
  });
  const frames = new VideoFrames({
    sessionId: deps.sessionId,
    renderer: deps.renderer,
    render,
    ffmpegPath: deps.ffmpegPath,
    crf: deps.crf,
    gopFrames: deps.gopFrames,
    clock,
    track,
    audio: playout,
    fanout,
    logger: deps.logger,
    encoded: hooks.encoded,
    encoderStarted: (pid) => deps.observer?.encoderStarted?.(deps.sessionId, pid),
    fail: hooks.fail,
    spares: deps.encoderSpares,
  });
  // The clock drives the audio first, then the frames (a frame reads the audio written for it).
  clock.drive(playout);
  clock.drive(frames);
  return { render, clock, fanout, track, playout, frames };
}

/** A 32-bit seed from a session id (blinks and head motion differ between sessions). */
export function hashSeed(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}
