import assert from "node:assert/strict";
import { DeviceClock, OnsetDetector } from "../../bench/device_tap.ts";
import { deviceSteady } from "../../bench/player.ts";

const RATE = 48_000;

Deno.test("device tap: an onset is a sample above −40 dBFS after 150 ms of quiet, across pieces", () => {
  const d = new OnsetDetector(RATE);
  const quiet = (s: number) => new Float32Array(Math.round(s * RATE));
  const loud = (s: number) => new Float32Array(Math.round(s * RATE)).fill(0.1);
  assert.deepEqual(d.push(quiet(0.2)), []);
  // (a piece boundary inside the loud part: one onset, where it starts)
  assert.deepEqual(d.push(loud(0.05)), [0.2 * RATE]);
  assert.deepEqual(d.push(loud(0.05)), []);
  // 100 ms of quiet is a pause inside a sound, not a new onset; 150 ms is
  assert.deepEqual(d.push(quiet(0.1)), []);
  assert.deepEqual(d.push(loud(0.01)), []);
  const at = 0.2 * RATE + 0.1 * RATE + 0.1 * RATE + 0.01 * RATE + 0.15 * RATE;
  assert.deepEqual(d.push(Float32Array.of(...quiet(0.15), 0.005, 0.02)), [at + 1]);
});

/**
 * Pieces of a recording as the monitor delivers them: 64 samples each, arriving `late(i)` ms after their last
 * sample was taken at the sink (true time `t0 + index / rate`), with `gapAt` samples in a pause of `gapMs`
 * (the sink took nothing).
 */
function record(
  clock: DeviceClock,
  t0: number,
  samples: number,
  late: (i: number) => number,
  gap?: { at: number; ms: number },
) {
  const truth = (index: number) => t0 + index / RATE * 1000 + (gap && index >= gap.at ? gap.ms : 0);
  for (let i = 0, total = 64; total <= samples; i++, total += 64) {
    clock.arrived(truth(total - 1) + late(i), total);
  }
  return truth;
}

Deno.test("device tap: a sample's time is within a fraction of a ms, however late most pieces arrive", () => {
  const clock = new DeviceClock(RATE);
  const t0 = 1_800_000_000_000;
  // late by 0.5–6 ms, now and then on time (as a piece read right away)
  const truth = record(clock, t0, RATE * 5, (i) => i % 37 === 0 ? 0 : 0.5 + (i * 7919) % 55 / 10);
  for (const index of [1000, RATE, 2.5 * RATE, 4 * RATE]) {
    const t = clock.time(index)!;
    assert.ok(Math.abs(t - truth(index)) < 0.5, `sample ${index}: ${t - truth(index)} ms off`);
  }
  assert.equal(clock.time(RATE * 6), null, "a sample not recorded yet has no time");
});

Deno.test("device tap: a gap in the recording moves neither the samples before it nor those after it", () => {
  // (a window either side of the sample put those just after a 500 ms gap 500 ms early: tried)
  const clock = new DeviceClock(RATE);
  const t0 = 1_800_000_000_000;
  const gap = { at: 2 * RATE, ms: 500 };
  const truth = record(clock, t0, RATE * 5, (i) => i % 11 === 0 ? 0 : 3, gap);
  // (right before the gap fewer pieces follow to take the least from: off by at most a piece's lateness)
  for (const index of [gap.at - 4800, gap.at - 64, gap.at + 100, gap.at + 4800, 4 * RATE]) {
    const t = clock.time(index)!;
    assert.ok(Math.abs(t - truth(index)) <= 3.5, `sample ${index}: ${t - truth(index)} ms off`);
  }
});

Deno.test("deviceSteady: each burst's onset at the device, and how much later the page's tap said it was", () => {
  const sent = [{ index: 0, sentAt: 1000 }, { index: 1, sentAt: 1020 }, { index: 0, sentAt: 2000 }];
  const frames = [
    { shown: 1060, made: 1000, dark: 0, pts: 0 },
    { shown: 1100, made: 1040, dark: 90, pts: 40 },
    { shown: 1140, made: 1080, dark: 90, pts: 80 },
    { shown: 2070, made: 2000, dark: 0, pts: 1000 },
    { shown: 2110, made: 2040, dark: 90, pts: 1040 },
    { shown: 2150, made: 2080, dark: 90, pts: 1080 },
  ];
  const r = deviceSteady(sent, [1090, 2095], [1080, 2100, 2500], frames, 500);
  assert.deepEqual(r.audio, [80, 100]);
  assert.deepEqual(r.av, [20, 10]);
  assert.deepEqual(r.pageMinusDevice, [10, -5]);
});
