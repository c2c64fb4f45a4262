/**
 * Per-session counters of the reference engine, exposed through `ReferenceEngine.stats()`.
 *
 * @module
 */

/** Counters of one engine connection (one bridge session). */
export interface EngineSessionStats {
  /** The bridge's session id from `session.start` ("" until the handshake succeeded). */
  session_id: string;
  /** The engine's id for this connection (sent as `engine_session_id`). */
  engine_session_id: string;
  /** Bytes of user audio received (binary frames after `session.ready`). */
  user_audio_bytes: number;
  /** Speech detected by the VAD in ended turns, in milliseconds. */
  user_speech_ms: number;
  /** User turns detected (speech followed by the end-of-turn silence). */
  user_turns: number;
  /** `response.started` messages sent (greeting included). */
  responses_started: number;
  /** Responses that ended with `response.done` `completed`. */
  responses_completed: number;
  /** Barge-ins: responses cut by `input.interrupt`. */
  interrupts: number;
  /** Bytes of response audio sent. */
  audio_bytes_sent: number;
  /** `response.played` acknowledgements received. */
  responses_played: number;
  /** Sum of `played_ms` over those acknowledgements. */
  played_ms: number;
  /** WebSocket close code once the connection is closed, else null. */
  closed_code: number | null;
}

/**
 * Creates zeroed counters.
 *
 * @param engineSessionId the id the engine gives the connection
 */
export function newSessionStats(engineSessionId: string): EngineSessionStats {
  return {
    session_id: "",
    engine_session_id: engineSessionId,
    user_audio_bytes: 0,
    user_speech_ms: 0,
    user_turns: 0,
    responses_started: 0,
    responses_completed: 0,
    interrupts: 0,
    audio_bytes_sent: 0,
    responses_played: 0,
    played_ms: 0,
    closed_code: null,
  };
}
