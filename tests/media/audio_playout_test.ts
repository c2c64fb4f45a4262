/**
 * The audio playout over a paced transport (the SFU's, which holds each packet until 10 ms before it is due):
 * a response's first speech takes the place of the silence written ahead and not sent yet, instead of waiting
 * behind it; what was sent is never taken back; the stream stays contiguous; and the speech's lead grows with
 * how late the engine's chunks came. Driven by hand: a real media clock whose ticks the test makes, a fake
 * paced sender.
 */
import assert from "node:assert/strict";
import { SessionFace } from "../../src/media/lipsync/session_face.ts";
import {
  AUDIO_BLOCK,
  AudioPlayout,
  blockStart,
  MAX_SPEECH_LEAD_PACED_MS,
  onsetAt,
  OPEN_SILENCE_LEAD_PACED_MS,
} from "../../src/media/session/audio_playout.ts";
import { MediaFanout } from "../../src/media/session/fanout.ts";
import { MediaClock } from "../../src/media/session/media_clock.ts";
import { OPUS_PRE_SKIP } from "../../src/media/opus_encoder.ts";
import type { EncodedAudioPacket } from "../../src/media/transports/transport.ts";

const ENGINE_RATE = 24000;
/** 20 ms of a tone at the engine's rate (speech, as far as the playout is concerned). */
const chunk = (i: number) =>
  Int16Array.from({ length: 480 }, (_, k) => Math.round(6000 * Math.sin((i * 480 + k) * 2 * Math.PI / 55)));

/** A paced sender: packets held until 10 ms before due (as the SFU transport), sent by {@link flush}. */
class PacedSender {
  held: EncodedAudioPacket[] = [];
  sent: EncodedAudioPacket[] = [];
  constructor(readonly preSkip: number) {}
  audio(p: EncodedAudioPacket): void {
    this.held.push({ ...p, data: p.data.slice() });
  }
  /** Sends what is due by timeline time `ms` (10 ms early). */
  flush(ms: number): void {
    while (this.held.length && (this.held[0].pts - this.preSkip) / 48 <= ms + 10) {
      this.sent.push(this.held.shift()!);
    }
  }
  unsentFrom(): number {
    return this.held.length ? this.held[0].pts : Infinity;
  }
  retract(pts: number): void {
    this.held = this.held.filter((p) => p.pts < pts);
  }
}

function setup(paced: boolean, startedMsAgo = 0) {
  const clock = new MediaClock(25);
  const face = new SessionFace({
    engineRate: ENGINE_RATE,
    timelineRate: 48000,
    inputRate: 16000,
    seed: 1,
    now: () => performance.now() - clock.t0,
  });
  const placed: { at: number; n: number }[] = [];
  const sender = new PacedSender(OPUS_PRE_SKIP);
  const playout = new AudioPlayout({
    clock,
    face,
    clients: () => 1,
    paced,
    engineRate: ENGINE_RATE,
    hold: 0,
    bitrate: 24000,
    backend: "wasm",
    packet: (p) => sender.audio(p),
    unsentFrom: paced ? () => sender.unsentFrom() : undefined,
    retract: paced ? (pts) => sender.retract(pts) : undefined,
    reportPlayed: () => {},
    observer: { speechPlaced: (_i, at, n) => placed.push({ at, n }) },
  });
  assert.equal(playout.opus.preSkip, OPUS_PRE_SKIP);
  // The clock runs from `startedMsAgo` ago (its ticks are the test's).
  clock.startAt(performance.now() - startedMsAgo, true);
  return { clock, playout, sender, placed };
}

/** Every packet given out, sent or held, follows the one before it. */
function assertContiguous(sender: PacedSender): void {
  const all = [...sender.sent, ...sender.held];
  for (let i = 1; i < all.length; i++) {
    assert.equal(all[i].pts, all[i - 1].pts + all[i - 1].samples, `packet ${i} follows packet ${i - 1}`);
  }
}

Deno.test("audio playout: over a paced transport a response's first speech takes the place of the silence written ahead and not sent, never of what was sent", () => {
  // With nothing sent ahead of time, the speech takes the silence's place; with the sender 28 ms ahead, the
  // silence left unsent holds no frame's instant: nothing is taken back.
  let retracted = 0;
  for (const sentAheadMs of [0, 28]) {
    const { clock, playout, sender, placed } = setup(true, 30);
    try {
      const t = performance.now();
      playout.tick(t); // a frame's tick: the silence is topped up to last past the next frame
      const written = playout.written;
      assert.ok(written >= clock.sampleAt(t) + 60 * 48, "silence written a frame and a block ahead");
      sender.flush(clock.sampleAt(t) / 48 + sentAheadMs);
      const sentUntil = sender.sent.at(-1)!.pts + AUDIO_BLOCK;
      const before = performance.now();
      playout.push(chunk(0), "r1");
      const after = performance.now();
      assert.equal(placed.length, 1, "the first chunk was placed at once");
      // The speech's first sample, and the block it starts in (silence before it in that block).
      const { at } = placed[0];
      const block = blockStart(at);
      assertContiguous(sender);
      assert.ok(block >= sentUntil, "nothing sent was taken back");
      assert.ok(sender.sent.every((p) => p.pts < block && p.data.length <= 8), "what was sent is silence");
      assert.ok(
        sender.held.find((p) => p.pts === block)!.data.length > 8,
        "the speech's packet is where it plays",
      );
      assert.equal(at % 1920, 0, "on a frame's instant: its mouth opens in the frame shown as it sounds");
      // The first frame instant past the lead and what was sent — when its block is before the silence's
      // end; else the speech goes after the silence.
      const expected = (ms: number) =>
        onsetAt(Math.max(clock.sampleAt(ms) + OPEN_SILENCE_LEAD_PACED_MS * 48, sentUntil), 1920);
      if (blockStart(expected(before)) >= written) {
        assert.equal(block, written, "no block to take back: the speech goes after the silence");
        assert.equal(playout.stats.audioRetracted, 0);
        continue;
      }
      assert.ok(
        block < written,
        `placed at ${at}, before the silence's end ${written}: it took that silence's place`,
      );
      assert.ok(playout.stats.audioRetracted >= 1);
      assert.ok(
        at >= expected(before) && at <= expected(after),
        "on the first frame instant past the lead",
      );
      retracted++;
    } finally {
      playout.close();
    }
  }
  assert.equal(retracted, 1, "the speech took the silence's place with nothing sent ahead");
});

Deno.test("audio playout: over a paced transport that holds nothing back, the speech goes after the silence written, on a frame's instant", () => {
  const { clock, playout, sender, placed } = setup(true, 30);
  try {
    const t = performance.now();
    playout.tick(t);
    const written = playout.written;
    sender.flush(clock.sampleAt(t) / 48 + 1000); // all of it sent: nothing can be taken back
    assert.equal(sender.unsentFrom(), Infinity);
    playout.push(chunk(0), "r1");
    assert.equal(placed.length, 1, "the first chunk was placed at once");
    const { at } = placed[0];
    assert.ok(at >= written && at < written + 1920, `placed at ${at}, the silence written to ${written}`);
    assert.equal(at % 1920, 0, "on a frame's instant");
    assert.ok(at >= clock.sampleAt(t) + OPEN_SILENCE_LEAD_PACED_MS * 48, "past the lead");
    assert.equal(playout.stats.audioRetracted, 0);
    assertContiguous(sender);
  } finally {
    playout.close();
  }
});

Deno.test("audio playout: without a paced transport nothing is taken back: the speech goes after the silence written", () => {
  const { clock, playout, sender, placed } = setup(false);
  try {
    playout.tick(performance.now());
    const written = playout.written;
    playout.push(chunk(0), "r1");
    assert.ok(placed[0].at >= written, `placed at ${placed[0].at}, the silence written to ${written}`);
    assert.ok(placed[0].at < written + AUDIO_BLOCK);
    assert.equal(playout.stats.audioRetracted, 0);
    assertContiguous(sender);
    void clock;
  } finally {
    playout.close();
  }
});

Deno.test("audio playout: the speech's lead over a paced transport grows to cover how late the engine's chunks came", async () => {
  const { clock, playout, placed } = setup(true);
  try {
    assert.equal(playout.speechLeadMs(), OPEN_SILENCE_LEAD_PACED_MS);
    // r1: its second chunk comes 30 ms or more after its audio says it should (the wait only lengthens).
    playout.tick(performance.now());
    playout.push(chunk(0), "r1");
    await new Promise((r) => setTimeout(r, 50));
    playout.push(chunk(1), "r1");
    playout.queue.done("r1");
    playout.tick(performance.now());
    // r2 comes: r1's lateness counts from now on.
    const n = placed.length;
    const before = performance.now();
    playout.push(chunk(2), "r2");
    const lead = playout.speechLeadMs();
    assert.ok(lead >= 30 + OPEN_SILENCE_LEAD_PACED_MS && lead <= MAX_SPEECH_LEAD_PACED_MS, `lead ${lead} ms`);
    const at = placed.find((p, i) => i >= n && p.n > 0)!.at;
    assert.ok(at >= clock.sampleAt(before) + lead * 48 - 1, "r2's first speech placed that far ahead");
  } finally {
    playout.close();
  }
});

Deno.test("audio playout: the fan-out takes audio back only where every subscriber still holds it", () => {
  const stream = { describe: () => ({}) as never };
  const fanout = new MediaFanout(stream.describe);
  const subscriber = (held: number | null) => ({
    clients: 1,
    videoClients: 0,
    animationClients: 0,
    configure() {},
    video() {},
    audio() {},
    animation() {},
    videoStopped() {},
    control: () => 0,
    retracted: [] as number[],
    ...(held === null ? {} : {
      audioUnsentFrom: () => held,
      retractAudio(this: { retracted: number[] }, pts: number) {
        this.retracted.push(pts);
      },
    }),
  });
  const a = subscriber(960), b = subscriber(1920);
  fanout.subscribe(a);
  fanout.subscribe(b);
  assert.equal(fanout.audioUnsentFrom(), Infinity, "nothing is delivered before the stream is configured");
  fanout.videoConfig(new Uint8Array([1]));
  assert.equal(fanout.audioUnsentFrom(), 1920, "from where both hold it");
  fanout.retractAudio(1920);
  assert.deepEqual([a.retracted, b.retracted], [[1920], [1920]]);
  const c = subscriber(null); // sends at once
  fanout.subscribe(c);
  assert.equal(fanout.audioUnsentFrom(), Infinity);
});

Deno.test("audio playout: a first speech over a paced transport starts on a frame's instant, inside the block that holds it", () => {
  // 25 fps: frames of 1920 samples; blocks of 960 start at 480, so a frame's instant is mid-block.
  assert.equal(onsetAt(0, 1920), 0);
  assert.equal(onsetAt(1, 1920), 1920);
  assert.equal(onsetAt(1920, 1920), 1920);
  assert.equal(onsetAt(2000, 1920), 3840);
  assert.equal(onsetAt(1601, 1600), 3200, "30 fps");
  assert.equal(blockStart(1920), 1440);
  assert.equal(blockStart(1440), 1440);
  assert.equal(blockStart(1439), 480);
  assert.equal(blockStart(3840), 3360);
});
