/**
 * A stand-in media plane for lifecycle tests: it reports client counts and failures through the runtime's
 * hooks exactly as the real media plane does (`clientsChanged`, `fail`), under the test's control.
 *
 * @module
 */
import type { SessionMedia, SessionMediaFactory } from "../src/worker/session_runtime.ts";

/** Controls of one session's stand-in media plane. */
export interface MediaControls {
  /** Reports `n` connected media clients. */
  clients(n: number): void;
  /** Reports a media-plane failure. */
  fail(reason: string): void;
  stopped: boolean;
}

/** A factory plus the controls of every session it created. */
export function testMedia(
  chunks = 0,
  options: { started?: () => Promise<void> } = {},
): { factory: SessionMediaFactory; sessions: Map<string, MediaControls> } {
  const sessions = new Map<string, MediaControls>();
  const factory: SessionMediaFactory = async (s) => {
    // Starting takes as long as the test says (the real plane starts encoders and waits for a frame).
    await options.started?.();
    const controls: MediaControls = { clients: s.clientsChanged, fail: s.fail, stopped: false };
    sessions.set(s.sessionId, controls);
    const media: SessionMedia = {
      onAudio() {},
      onResponseStarted() {},
      onResponseDone() {},
      onInterrupt() {},
      onTranscript() {},
      chunksRendered: () => chunks,
      stop() {
        controls.stopped = true;
        return Promise.resolve(null);
      },
    };
    return media;
  };
  return { factory, sessions };
}
