/**
 * A response's first speech over a paced transport (the SFU's) when no video is made (its clients are
 * video-free: they draw the mouth from the visemes' times): it starts where its lead allows, not on the next
 * frame's instant (`AudioPlayoutDeps.framed`), in the first block the transport has not sent, its visemes
 * from there. Driven through a session's media with a fake paced transport (audio held until 10 ms before it
 * is due, as the SFU transport holds it).
 */
import assert from "node:assert/strict";
import { vowelBurst } from "../../bench/engine.ts";
import { loadConfig } from "../../src/config.ts";
import { silentLogger } from "../../src/log.ts";
import { AvatarSessionMedia } from "../../src/media/session_media.ts";
import type {
  AnimationMessage,
  EncodedAudioPacket,
  MediaTransport,
  StreamConfig,
} from "../../src/media/transports/transport.ts";
import { DEADLINE_MS, until } from "../../testing/deadline.ts";
import { smallRenderer } from "../../testing/media.ts";

/** An open vowel ("ah") at 24 kHz: the lip sync opens the mouth from its first 10 ms. */
const AH = vowelBurst(300);

/** A transport that paces its audio as the SFU's does and keeps what it was given. */
class PacedTransport implements MediaTransport {
  readonly kind = "webrtc_sfu" as const;
  readonly clients = 1;
  readonly videoClients = 0;
  readonly animationClients = 1;
  config: StreamConfig | null = null;
  /** The `pts` of the packets sent, and of any packet given again for one of them (must not happen). */
  readonly sent = new Set<number>();
  readonly resent: number[] = [];
  readonly visemes: { t_ms: number; viseme: string }[] = [];
  held: EncodedAudioPacket[] = [];
  configure(config: StreamConfig): void {
    this.config = config;
  }
  video(): void {}
  audio(packet: EncodedAudioPacket): void {
    this.#send();
    if (this.sent.has(packet.pts)) this.resent.push(packet.pts);
    this.held.push(packet);
  }
  /** Packets due within 10 ms leave (as the SFU's pacer sends them). */
  #send(): void {
    const now = this.config?.timelineMs() ?? 0;
    const preSkip = this.config?.opus.preSkip ?? 0;
    while (this.held.length && (this.held[0].pts - preSkip) / 48 <= now + 10) {
      this.sent.add(this.held.shift()!.pts);
    }
  }
  audioUnsentFrom(): number {
    this.#send();
    return this.held.length ? this.held[0].pts : Infinity;
  }
  retractAudio(pts: number): void {
    this.held = this.held.filter((p) => p.pts < pts);
  }
  animation(m: AnimationMessage): void {
    if (m.type === "viseme") this.visemes.push(m);
  }
  videoStopped(): void {}
  control(): number {
    return 1;
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
  stats() {
    return { bytesSent: 0, slowClientsClosed: 0 };
  }
}

Deno.test("paced onset: with no video made, a response's first speech starts at its lead, not on a frame's instant, in a packet not sent yet, and its visemes start with it", async () => {
  const transport = new PacedTransport();
  const placed: { at: number; n: number }[] = [];
  const played: string[] = [];
  const media = await AvatarSessionMedia.start({
    sessionId: "session:paced_onset",
    avatarId: "ada",
    bgId: "studio",
    renderer: await smallRenderer(),
    connection: {
      inputSampleRate: 16000,
      outputSampleRate: 24000,
      sendUserAudio: () => {},
      reportPlayed: (id) => played.push(id),
    },
    ffmpegPath: loadConfig({}).media.ffmpegPath,
    crf: 30,
    audioBitrate: 24000,
    firstFrameTimeoutMs: DEADLINE_MS,
    transport: () => Promise.resolve(transport),
    paced: true,
    lipSync: { g2p: null },
    logger: silentLogger,
    fail: () => {},
    clientsChanged: () => {},
    onStopped: () => {},
    observer: { speechPlaced: (_i, at, n) => placed.push({ at, n }) },
  });
  const BURSTS = 6;
  /** Each burst: where its speech starts on the timeline (ms), and when its first chunk came. */
  const bursts: { onset: number; pushed: number }[] = [];
  try {
    // (The start's encoder, which gave the stream's configuration, has stopped: no video client.)
    const timeline = () => transport.config!.timelineMs();
    for (let b = 0; b < BURSTS; b++) {
      // Sent so that its lead (15 ms) ends 2–7 ms after a frame's instant, 12–17 ms into an audio block (the
      // blocks start 10 ms off the instants) whose packet has left: the speech starts on the next block, 3–8
      // ms later, where waiting for the next frame's instant would cost 33–38 ms.
      const phase = 27 + b;
      await new Promise((r) => setTimeout(r, 320 + ((phase - timeline() % 40) + 80) % 40));
      const id = `r_${b}`;
      const before = placed.length;
      media.onResponseStarted(id);
      const t0 = performance.now();
      for (let i = 0; i * 480 < AH.length; i++) {
        // On a schedule of real time (not 20 ms after the last: timers run late, and a late chunk raises the
        // speech's lead).
        await new Promise((r) => setTimeout(r, Math.max(0, t0 + 20 * i - performance.now())));
        const pushed = timeline();
        media.onAudio(AH.slice(i * 480, (i + 1) * 480), id);
        if (i === 0) {
          assert.ok(placed.length > before, `${id}'s first chunk was placed at once`);
          bursts.push({ onset: placed[before].at / 48, pushed });
        }
      }
      media.onResponseDone(id, "completed");
      await until(() => played.includes(id), `${id} played`);
    }
  } finally {
    await media.stop({ graceful: false, timeoutMs: 0 });
  }
  const show = bursts.map((b) =>
    `${(b.onset - b.pushed).toFixed(1)} ms after (${(b.onset % 40).toFixed(1)} past an instant)`
  )
    .join(", ");
  // Nothing sent was given again (the speech took only the place of silence not sent yet).
  assert.deepEqual(transport.resent, [], "packets given again for instants already sent");
  const off = bursts.filter((b) => b.onset % 40 !== 0);
  assert.ok(off.length >= BURSTS - 1, `onsets off the frames' instants: ${off.length} of ${BURSTS}: ${show}`);
  for (const b of bursts) {
    // The mouth (the visemes video-free clients draw) opens with the speech, not before it.
    const open = transport.visemes.find((v) => v.t_ms >= b.onset - 10 && v.viseme !== "sil");
    assert.ok(
      open && open.t_ms >= b.onset - 0.5 && open.t_ms <= b.onset + 30,
      `visemes from the onset ${b.onset}: ${
        JSON.stringify(transport.visemes.filter((v) => Math.abs(v.t_ms - b.onset) < 60))
      }`,
    );
  }
});
