/**
 * The silence feeder of vendor2 and vendor3 on a clock moved by hand (a deterministic schedule, no real
 * timers): continuous speech in 20, 40 and 100 ms frames arriving with ±15 ms of jitter and one 250 ms
 * network stall reaches the vendor with no silence spliced in (≤ 1 % added, the issue's bound; 0 in fact); a
 * silent or absent microphone keeps the vendor fed as it needs (chunks of at most 100 ms, every 100 ms, no
 * wall-clock gap near the vendors' 60 s / 120 s idle limits); a microphone that stops is followed by its
 * gap's silence within the threshold.
 */
import assert from "node:assert/strict";
import {
  MAX_CLOCK_SKEW_MS,
  SILENCE_CHUNK_MS,
  SILENCE_GAP_MS,
  SilenceFeeder,
} from "../../src/providers/feeder.ts";
import { prng } from "../../src/media/motion.ts";
import { ManualClock } from "../../testing/manual_clock.ts";

/** What the vendor received, in order: the user's frames and the feeder's silence, with their clock times. */
interface Sent {
  at: number;
  kind: "mic" | "silence";
  ms: number;
}

function feeder(clock: ManualClock) {
  const sent: Sent[] = [];
  const stop = new AbortController();
  const f = new SilenceFeeder(
    clock,
    stop.signal,
    (ms) => sent.push({ at: clock.now(), kind: "silence", ms }),
  );
  const mic = (ms: number) => {
    sent.push({ at: clock.now(), kind: "mic", ms });
    f.fed(ms);
  };
  return { sent, mic, stop: () => stop.abort() };
}

/**
 * Arrival times of `speechMs` of speech captured from `startAt` in frames of `frameMs`: each frame leaves once
 * captured, arrives ±`jitterMs` later than that, never before the previous one (one ordered stream), and the
 * frames due during the stall `[stallAt, stallAt + stallMs)` arrive together at its end.
 */
function arrivals(
  o: {
    startAt: number;
    speechMs: number;
    frameMs: number;
    jitterMs: number;
    stallAt: number;
    stallMs: number;
  },
  random: () => number,
): number[] {
  const out: number[] = [];
  let last = -Infinity;
  for (let k = 0; k < o.speechMs / o.frameMs; k++) {
    let t = o.startAt + (k + 1) * o.frameMs + (random() * 2 - 1) * o.jitterMs;
    if (t >= o.stallAt && t < o.stallAt + o.stallMs) t = o.stallAt + o.stallMs;
    t = Math.max(t, last);
    out.push(t);
    last = t;
  }
  return out;
}

/** Plays `times` (one `frameMs` frame each) on the clock; returns when the last one went out. */
async function play(clock: ManualClock, mic: (ms: number) => void, times: number[], frameMs: number) {
  for (const t of times) {
    await clock.advanceTo(t);
    mic(frameMs);
  }
}

const silenceBetween = (sent: Sent[], from: number, to: number) =>
  sent.filter((s) => s.kind === "silence" && s.at >= from && s.at <= to).reduce((n, s) => n + s.ms, 0);

for (const frameMs of [20, 40, 100]) {
  Deno.test(`feeder: continuous speech in ${frameMs} ms frames with ±15 ms jitter and a 250 ms stall gains ≤ 1 % (none) of silence`, async () => {
    for (const seed of [1, 7, 42]) {
      const clock = new ManualClock(0);
      const { sent, mic, stop } = feeder(clock);
      try {
        // 1 s with nobody talking (the vendor is fed silence), then 4 s of speech.
        const times = arrivals(
          { startAt: 1000, speechMs: 4000, frameMs, jitterMs: 15, stallAt: 3000, stallMs: 250 },
          prng(seed),
        );
        await play(clock, mic, times, frameMs);
        const speechMs = sent.filter((s) => s.kind === "mic").reduce((n, s) => n + s.ms, 0);
        assert.equal(speechMs, 4000, "every frame of the user's audio reached the vendor");
        const added = silenceBetween(sent, times[0], times.at(-1)!);
        assert.ok(added <= 0.01 * speechMs, `seed ${seed}: ${added} ms of silence within 4000 ms of speech`);
        assert.equal(added, 0, `seed ${seed}: no silence at all between the user's frames`);
        // Before the speech the absent microphone was covered.
        assert.ok(silenceBetween(sent, 0, 1000) >= 900, "the second before the speech was fed");
      } finally {
        stop();
      }
    }
  });
}

Deno.test("feeder: an absent microphone is covered continuously, in chunks of at most 100 ms every 100 ms", async () => {
  const clock = new ManualClock(0);
  const { sent, stop } = feeder(clock);
  try {
    await clock.advanceTo(120_000);
    const silence = sent.filter((s) => s.kind === "silence");
    const total = silence.reduce((n, s) => n + s.ms, 0);
    assert.ok(total >= 120_000 - SILENCE_CHUNK_MS && total <= 120_000, `${total} ms fed over 120 s`);
    assert.ok(
      silence.every((s) => s.ms <= SILENCE_CHUNK_MS),
      "chunks of at most 100 ms (Cartesia: 20–100 ms)",
    );
    const gaps = silence.slice(1).map((s, i) => s.at - silence[i].at);
    assert.ok(Math.max(...gaps) <= SILENCE_CHUNK_MS, `longest pause between chunks ${Math.max(...gaps)} ms`);
  } finally {
    stop();
  }
});

Deno.test("feeder: a silent microphone (zeros at real time) is passed as it is; nothing is added", async () => {
  const clock = new ManualClock(0);
  const { sent, mic, stop } = feeder(clock);
  try {
    const times = Array.from({ length: 3000 }, (_, k) => (k + 1) * 20); // 60 s of 20 ms frames
    await play(clock, mic, times, 20);
    assert.equal(silenceBetween(sent, 20, 60_000), 0);
  } finally {
    stop();
  }
});

Deno.test("feeder: a microphone that stops leaves a real gap: it is filled within the threshold, then kept fed", async () => {
  const clock = new ManualClock(0);
  const { sent, mic, stop } = feeder(clock);
  try {
    const times = Array.from({ length: 100 }, (_, k) => (k + 1) * 20); // 2 s of speech, ending at 2000
    await play(clock, mic, times, 20);
    await clock.advanceTo(2000 + SILENCE_GAP_MS - 1);
    assert.equal(silenceBetween(sent, 2001, clock.now()), 0, "nothing before the threshold");
    await clock.advanceTo(2000 + SILENCE_GAP_MS + SILENCE_CHUNK_MS);
    const fill = silenceBetween(sent, 2001, clock.now());
    assert.ok(fill >= SILENCE_GAP_MS, `the gap so far is covered at once (${fill} ms)`);
    await clock.advanceTo(10_000);
    const fed = sent.reduce((n, s) => n + s.ms, 0);
    assert.ok(
      Math.abs(fed - 10_000) <= SILENCE_CHUNK_MS,
      `the audio clock stays on time (${fed} ms in 10 s)`,
    );
  } finally {
    stop();
  }
});

Deno.test("feeder: a microphone running ahead of real time delays the silence by at most the skew bound", async () => {
  const clock = new ManualClock(0);
  const { sent, mic, stop } = feeder(clock);
  try {
    // 5 s of frames twice as fast as real time (a client sending a backlog), then nothing.
    for (let k = 1; k <= 250; k++) {
      await clock.advanceTo(k * 20);
      mic(40);
    }
    await clock.advanceTo(5000 + SILENCE_GAP_MS + MAX_CLOCK_SKEW_MS + SILENCE_CHUNK_MS);
    const first = sent.find((s) => s.kind === "silence" && s.at > 5000);
    assert.ok(first, "silence resumed");
    assert.ok(
      first.at - 5000 <= SILENCE_GAP_MS + MAX_CLOCK_SKEW_MS + SILENCE_CHUNK_MS,
      `after ${first.at - 5000} ms`,
    );
  } finally {
    stop();
  }
});
