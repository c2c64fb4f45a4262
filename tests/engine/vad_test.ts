import assert from "node:assert/strict";
import { EnergyVad, type VadEvent, type VadTurnEnded } from "../../src/speech/vad.ts";
import { join, noise, silence, tone } from "./_helpers.ts";

const RATE = 16000;

function turns(events: VadEvent[]): VadTurnEnded[] {
  return events.filter((e): e is VadTurnEnded => e.type === "turn_ended");
}

Deno.test("vad: silence and quiet noise produce no events", () => {
  const vad = new EnergyVad({ sampleRate: RATE });
  assert.deepEqual(vad.push(silence(2000, RATE)), []);
  assert.deepEqual(vad.push(noise(2000, RATE, 300)), []); // RMS ~173
  assert.equal(vad.speaking, false);
  assert.ok(vad.noiseFloor > 100 && vad.noiseFloor < 250, `noise floor ${vad.noiseFloor}`);
});

Deno.test("vad: a tone burst is one turn with pre-roll, speech and tail", () => {
  const vad = new EnergyVad({ sampleRate: RATE });
  const events = vad.push(join(silence(300, RATE), tone(500, RATE), silence(1000, RATE)));
  assert.equal(events.length, 2);
  assert.equal(events[0].type, "speech_started");
  assert.equal(events[0].atMs, 300);
  const turn = events[1] as VadTurnEnded;
  assert.equal(turn.type, "turn_ended");
  assert.equal(turn.reason, "silence");
  assert.equal(turn.speechMs, 500);
  // 200 ms pre-roll + 500 ms speech + 200 ms tail
  assert.equal(turn.samples.length, (200 + 500 + 200) * RATE / 1000);
  // the turn ends 600 ms after the last voiced frame (300 + 500 + 600)
  assert.equal(turn.atMs, 1400);
  // the speech part is the tone, the pre-roll is silence
  assert.equal(turn.samples[0], 0);
  assert.ok(Math.max(...turn.samples.subarray(200 * 16, 700 * 16)) > 7000);
});

Deno.test("vad: speech starts only after ~60 ms above threshold (clicks are ignored)", () => {
  const vad = new EnergyVad({ sampleRate: RATE });
  assert.deepEqual(vad.push(join(tone(40, RATE), silence(1000, RATE))), []);
  const events = vad.push(join(tone(60, RATE), silence(1000, RATE)));
  assert.deepEqual(events.map((e) => e.type), ["speech_started", "turn_ended"]);
});

Deno.test("vad: pauses shorter than the end-of-turn silence keep one turn; longer ones split", () => {
  const one = new EnergyVad({ sampleRate: RATE });
  const a = one.push(join(tone(300, RATE), silence(400, RATE), tone(300, RATE), silence(700, RATE)));
  assert.deepEqual(a.map((e) => e.type), ["speech_started", "turn_ended"]);
  assert.equal(turns(a)[0].speechMs, 1000);

  const two = new EnergyVad({ sampleRate: RATE });
  const b = two.push(join(tone(300, RATE), silence(700, RATE), tone(300, RATE), silence(700, RATE)));
  assert.deepEqual(b.map((e) => e.type), ["speech_started", "turn_ended", "speech_started", "turn_ended"]);
});

Deno.test("vad: end-of-turn silence is configurable", () => {
  const vad = new EnergyVad({ sampleRate: RATE, endSilenceMs: 200 });
  const events = vad.push(join(tone(300, RATE), silence(300, RATE)));
  assert.equal(turns(events).length, 1);
  assert.equal(turns(events)[0].atMs, 500);
});

Deno.test("vad: results do not depend on how the audio is chunked", () => {
  const signal = join(
    silence(250, RATE),
    tone(430, RATE),
    silence(150, RATE),
    tone(200, RATE),
    silence(900, RATE),
  );
  const whole = new EnergyVad({ sampleRate: RATE }).push(signal);
  const chunked = new EnergyVad({ sampleRate: RATE });
  const events: VadEvent[] = [];
  for (let i = 0; i < signal.length; i += 77) events.push(...chunked.push(signal.subarray(i, i + 77)));
  assert.deepEqual(events, whole);
});

Deno.test("vad: the noise floor adapts and raises the threshold", () => {
  const vad = new EnergyVad({ sampleRate: RATE, threshold: 400, noiseFactor: 3 });
  vad.push(noise(1000, RATE, 600, 7)); // RMS ~346, below the fixed threshold
  assert.ok(vad.threshold > 900, `threshold ${vad.threshold}`);
  // a burst at ~RMS 700 is above the fixed threshold but not above the adapted one
  assert.deepEqual(vad.push(join(tone(300, RATE, 990), noise(800, RATE, 600, 9))), []);
  // a loud burst over the noise is speech
  const events = vad.push(join(tone(300, RATE, 9000), noise(800, RATE, 600, 11)));
  assert.deepEqual(events.map((e) => e.type), ["speech_started", "turn_ended"]);
});

Deno.test("vad: a long monologue is cut at maxTurnMs", () => {
  const vad = new EnergyVad({ sampleRate: RATE, maxTurnMs: 1000 });
  const events = vad.push(tone(1500, RATE));
  const ended = turns(events);
  assert.equal(ended.length, 1);
  assert.equal(ended[0].reason, "max_length");
  assert.equal(ended[0].speechMs, 1000);
  // speech resumes right after the cut
  assert.equal(events.filter((e) => e.type === "speech_started").length, 2);
});

Deno.test("vad: flush ends a turn in progress", () => {
  const vad = new EnergyVad({ sampleRate: RATE });
  assert.deepEqual(vad.push(tone(400, RATE)).map((e) => e.type), ["speech_started"]);
  assert.equal(vad.speaking, true);
  const flushed = turns(vad.flush());
  assert.equal(flushed.length, 1);
  assert.equal(flushed[0].reason, "flush");
  assert.equal(vad.speaking, false);
  assert.deepEqual(vad.flush(), []);
});

Deno.test("vad: works at 8000 Hz and 44100 Hz", () => {
  for (const rate of [8000, 44100]) {
    const vad = new EnergyVad({ sampleRate: rate });
    const events = vad.push(join(silence(200, rate), tone(400, rate), silence(800, rate)));
    assert.deepEqual(events.map((e) => e.type), ["speech_started", "turn_ended"], `rate ${rate}`);
    assert.ok(Math.abs(turns(events)[0].speechMs - 400) <= 1, `rate ${rate}: ${turns(events)[0].speechMs}`);
  }
});

Deno.test("vad: invalid options are rejected", () => {
  assert.throws(() => new EnergyVad({ sampleRate: 0 }), RangeError);
  assert.throws(() => new EnergyVad({ sampleRate: RATE, frameMs: 1 }), RangeError);
  assert.throws(() => new EnergyVad({ sampleRate: RATE, threshold: -1 }), RangeError);
});
