/**
 * Types of `sdk/player_webrtc.js`, the browser player of the `webrtc_sfu` transport (WebRTC through the
 * service's SFU). `createPlayer` from `sdk/player.js` uses it for sessions whose `stream_metadata` names
 * the `webrtc_sfu` transport. See docs/media-plane.md, "WebRTC through the SFU".
 *
 * @module
 */
import type { AvatarPlayer, CreatePlayerOptions } from "./player.d.ts";

/** Subprotocol of the SFU signalling WebSocket. */
export declare const SFU_SUBPROTOCOL: "avatar-sfu.v0";

/**
 * Creates a WebRTC player for a `webrtc_sfu` session and connects it; `options.streamMetadata` (with
 * `sfu_endpoint`, `session_token` and `ice_servers`) is required.
 */
export declare function createWebRtcPlayer(options: CreatePlayerOptions): AvatarPlayer;
