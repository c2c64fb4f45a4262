/**
 * Debian's Chromium, headless, driven by Playwright-core (never a downloaded browser), with the flags this
 * machine needs (no sandbox as root, no GPU, no background network traffic).
 *
 * @module
 */
import { type Browser, chromium } from "playwright-core";
import type { SoundServer } from "./firefox.ts";

/** Where Debian installs Chromium. */
export const CHROMIUM = "/usr/bin/chromium";

/**
/**
 * Launches headless Chromium. `media: true` adds a fake microphone and lets media play without a user
 * gesture (unless `autoplay: "gesture"`: then Chromium's own rule applies, as in a user's browser — sound
 * waits for a click); the microphone is granted without a prompt unless `microphone: "refused"` (then every request
 * for it is refused, as when a user says no). `webrtc: true` also offers plain host ICE candidates (no mDNS
 * names, loopback allowed), which an SFU on the same host needs. `microphoneWav` makes the fake microphone say
 * that WAV file, over and over (Chromium's own fake device beeps, which an engine's VAD may never take for a
 * turn). `sound` plays its sound to that server (a PulseAudio null sink), unmuted (Playwright mutes a
 * headless Chromium's sound otherwise).
 */
export async function launchChromium(
  options: {
    media?: boolean;
    microphone?: "granted" | "refused";
    webrtc?: boolean;
    autoplay?: "allowed" | "gesture";
    microphoneWav?: string;
    sound?: SoundServer;
  } = {},
): Promise<Browser> {
  return await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    ...(options.sound
      ? { env: { ...Deno.env.toObject(), ...options.sound.env }, ignoreDefaultArgs: ["--mute-audio"] }
      : {}),
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--no-first-run",
      ...(options.media
        ? [
          ...(options.autoplay === "gesture" ? [] : ["--autoplay-policy=no-user-gesture-required"]),
          "--use-fake-device-for-media-stream",
          ...(options.microphoneWav ? [`--use-file-for-fake-audio-capture=${options.microphoneWav}`] : []),
          // (without it, Playwright's Chromium refuses permission requests)
          ...(options.microphone === "refused" ? [] : ["--use-fake-ui-for-media-stream"]),
        ]
        : []),
      ...(options.webrtc
        ? ["--allow-loopback-in-peer-connection", "--disable-features=WebRtcHideLocalIpsWithMdns"]
        : []),
    ],
  });
}

/** The fields of `player.stats()`, whatever the transport (sdk/player.d.ts `PlayerStats`), sorted. */
export const PLAYER_STATS_KEYS: readonly string[] = [
  "anchorMs",
  "audioDecodedMs",
  "audioUnderrunMs",
  "avOffsetMs",
  "bytesReceived",
  "catchUps",
  "framesDecoded",
  "framesDropped",
  "lastCatchUpMs",
  "latencyMs",
  "micFramesSent",
  "playback",
  "reconnects",
  "skippedMs",
  "speechSkippedMs",
  "stalls",
];
