/**
 * The WebCodecs player's playout worklet (`sdk/player_clock.js`), run outside a browser with the globals of
 * an AudioWorkletGlobalScope faked: its output must never hold a non-finite sample (a NaN on the output is a
 * click a user hears, or silences the graph after it). An outside check once read NaN on the player's output;
 * reading a chunk past its fractional end was the way to it.
 */
import assert from "node:assert/strict";

// Loaded by URL: player_clock.js is type-checked with the DOM libraries (`tests/sdk/browser.deno.json`, in
// `deno task ok`), which this test's own check has not.
const { WORKLET, unstampedLatency, deviceOffsetFrom, assumedOutputLatency } = await import(
  new URL("../../sdk/player_clock.js", import.meta.url).href
) as {
  WORKLET: string;
  assumedOutputLatency(option: number | "read" | undefined, userAgent: string): number | null;
  unstampedLatency(
    ctx: { currentTime: number; outputLatency?: number },
    ts: { contextTime?: number; performanceTime?: number },
    now: number,
  ): number;
  deviceOffsetFrom(readings: number[]): number;
};

type Port = { onmessage: ((e: { data: unknown }) => void) | null; postMessage(m: unknown): void };
type Processor = { port: Port; process(i: unknown, o: Float32Array[][]): boolean };

/** Loads the worklet's processor class with faked scope globals; `frame` is the scope's `currentFrame`. */
function loadProcessor(rate = 48000): { make(): Processor; setFrame(f: number): void } {
  let registered: (new (o: unknown) => Processor) | null = null;
  const scope = { currentFrame: 0 };
  class AudioWorkletProcessor {
    port: Port = { onmessage: null, postMessage() {} };
  }
  const define = new Function(
    "AudioWorkletProcessor",
    "registerProcessor",
    "sampleRate",
    "scope",
    `with (scope) { ${WORKLET} }`,
  );
  define(AudioWorkletProcessor, (_: string, c: new (o: unknown) => Processor) => registered = c, rate, scope);
  assert(registered, "the worklet registers its processor");
  const Cls = registered as new (o: unknown) => Processor;
  return {
    make: () => new Cls({ processorOptions: { rate: 48000, slewBelowMs: 12, maxSlew: 0.002, fadeMs: 4 } }),
    setFrame: (f) => scope.currentFrame = f,
  };
}

/** Plays `quanta` render quanta from frame 0; returns every output sample of channel 0. */
function play(p: Processor, setFrame: (f: number) => void, quanta: number): number[] {
  const out: number[] = [];
  for (let q = 0; q < quanta; q++) {
    setFrame(q * 128);
    const ch = [new Float32Array(128), new Float32Array(128)];
    p.process([], [ch]);
    out.push(...ch[0]);
  }
  return out;
}

const send = (p: Processor, data: unknown) => p.port.onmessage!({ data });

Deno.test("playout worklet: a chunk with a fractional end next to a gap, read at a fractional instant, outputs no NaN", () => {
  const { make, setFrame } = loadProcessor();
  const p = make();
  // Origin half a frame in: every instant read is fractional (as an anchor in ms makes it).
  send(p, { type: "origin", origin: 0.5, jump: true });
  // A chunk whose start (and so end, 110.3) is fractional, then a gap, then another chunk.
  send(p, { type: "pcm", start: 10.3, data: new Float32Array(100).fill(0.5) });
  send(p, { type: "pcm", start: 200, data: new Float32Array(100).fill(0.25) });
  const out = play(p, setFrame, 4);
  const bad = out.findIndex((x) => !Number.isFinite(x));
  assert.equal(bad, -1, `sample ${bad} is ${out[bad]}`);
  // The sound itself is played: the first chunk's samples, silence in the gap, the second chunk's.
  assert.equal(out[50], 0.5);
  assert.equal(out[150], 0);
  assert.equal(out[250], 0.25);
});

Deno.test("playout worklet: a non-finite gain or decoded sample plays as silence, never NaN", () => {
  const { make, setFrame } = loadProcessor(44100); // a context at 44.1 kHz: the instants read are fractional
  const p = make();
  send(p, { type: "origin", origin: 0, jump: true });
  const data = new Float32Array(960).fill(0.5);
  data[100] = NaN;
  data[101] = Infinity;
  send(p, { type: "pcm", start: 0, data });
  send(p, { type: "gain", gain: NaN });
  const out = play(p, setFrame, 8);
  const bad = out.findIndex((x) => !Number.isFinite(x));
  assert.equal(bad, -1, `sample ${bad} is ${out[bad]}`);
  assert(out.filter((x) => x === 0.5).length > 500, "the finite samples play at the last finite gain (1)");
});

Deno.test("output timestamps: Firefox's, moved back by its output latency, get it back; Chromium's and a mock device's are taken as they are", () => {
  // Readings of each browser here (6 Dec): currentTime − contextTime, now − performanceTime, outputLatency.
  // Firefox ESR on a PulseAudio sink: both moved back by the output latency (36.17 ms).
  const firefox = unstampedLatency({ currentTime: 10.03617, outputLatency: 0.03617 }, {
    contextTime: 10,
    performanceTime: 5000 - 36.17,
  }, 5000);
  assert.ok(Math.abs(firefox - 36.17) < 0.01, `Firefox: ${firefox}`);
  // Chromium: the context time behind by the output path (41 ms), the page time about now (7 ms behind).
  assert.equal(
    unstampedLatency({ currentTime: 10.041, outputLatency: 0.032 }, {
      contextTime: 10,
      performanceTime: 4993,
    }, 5000),
    0,
  );
  // Firefox's mock device: no latency, nothing moved.
  assert.equal(
    unstampedLatency({ currentTime: 10, outputLatency: 0 }, { contextTime: 10, performanceTime: 5000 }, 5000),
    0,
  );
  // A browser without a stamp yet.
  assert.equal(unstampedLatency({ currentTime: 0 }, {}, 5000), 0);
});

Deno.test("the device's offset: Firefox's readings, late by up to a callback's block, give their floor; Chromium's, steady, their value", () => {
  // 30 consecutive readings (page time − device time of the sample heard, ms, Firefox's moved stamp corrected),
  // one every 23 ms, of Firefox ESR 153 on a PulseAudio null sink (6 Dec). Over 200 readings of that run the
  // floor was 1162.31 (the least but two strays: 1131, here, and 1145.33).
  const firefox = [
    1175.65,
    1179.98,
    1131,
    1169.98,
    1175.31,
    1180.65,
    1166.31,
    1170.65,
    1174.98,
    1180.31,
    1165.98,
    1170.31,
    1175.65,
    1179.98,
    1165.65,
    1168.31,
    1172.65,
    1177.98,
    1162.65,
    1167.98,
    1173.31,
    1177.65,
    1182.98,
    1168.65,
    1172.98,
    1178.31,
    1181.65,
    1168.31,
    1170.98,
    1175.31,
  ];
  const median = [...firefox].sort((a, b) => a - b)[15];
  assert.ok(median - 1162.31 > 8, `the median is half a block late: ${median}`);
  const got = deviceOffsetFrom(firefox);
  assert.ok(got >= 1162.31 && got - 1162.31 < 4, `Firefox: ${got}`);
  // Chromium on the same machine: 30 readings within 0.3 ms.
  const chromium = [
    178.84,
    178.84,
    178.86,
    178.79,
    178.87,
    178.98,
    178.82,
    178.86,
    178.9,
    178.83,
    178.77,
    178.74,
    178.82,
    178.74,
    178.7,
    178.78,
    178.84,
    178.73,
    178.7,
    178.85,
    178.74,
    178.78,
    178.73,
    178.76,
    178.75,
    178.79,
    178.75,
    178.79,
    178.73,
    178.7,
  ];
  assert.ok(Math.abs(deviceOffsetFrom(chromium) - 178.78) < 0.1, `Chromium: ${deviceOffsetFrom(chromium)}`);
  // The first readings of a clock: the least of them.
  assert.equal(deviceOffsetFrom([1175.65]), 1175.65);
  assert.equal(deviceOffsetFrom([1175.65, 1179.98, 1169.98]), 1169.98);
});

/** User agents of the browsers concerned (Firefox ESR 153 on Linux as Debian ships it; others as they say). */
const AGENTS = {
  firefoxLinux: "Mozilla/5.0 (X11; Linux x86_64; rv:153.0) Gecko/20100101 Firefox/153.0",
  firefoxAndroid: "Mozilla/5.0 (Android 14; Mobile; rv:153.0) Gecko/153.0 Firefox/153.0",
  firefoxWindows: "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:153.0) Gecko/20100101 Firefox/153.0",
  chromiumLinux:
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36",
  chromeAndroid:
    "Mozilla/5.0 (Linux; Android 14) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Mobile Safari/537.36",
};

Deno.test('output latency: assumed (47 ms) only in Firefox on Linux by default, never asked when given, asked everywhere with "read"', () => {
  assert.equal(assumedOutputLatency(undefined, AGENTS.firefoxLinux), 47);
  for (
    const agent of [
      AGENTS.firefoxAndroid,
      AGENTS.firefoxWindows,
      AGENTS.chromiumLinux,
      AGENTS.chromeAndroid,
      "",
    ]
  ) {
    assert.equal(assumedOutputLatency(undefined, agent), null, agent);
  }
  assert.equal(assumedOutputLatency("read", AGENTS.firefoxLinux), null);
  assert.equal(assumedOutputLatency(25, AGENTS.chromiumLinux), 25);
  assert.equal(assumedOutputLatency(0, AGENTS.firefoxLinux), 0);
});
