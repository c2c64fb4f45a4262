/**
 * The page side of the benches' sound tap, shared by `bench/player.ts` and `bench/video_free_browser.ts`:
 * page script (a string, evaluated in the page before the bench's own) that defines
 * `globalThis.onsetTap(onsets)`. It makes an `AudioContext` (48 kHz, "interactive") with a gain node `tap`
 * that plays to the speakers and feeds an AudioWorklet detecting each onset — a sample above −40 dBFS after
 * 150 ms of quiet (the context's start and no input count as quiet) — and pushes into `onsets` the epoch time (ms) that sample is heard, from the context's
 * output timestamps (`getOutputTimestamp()`, read every 10 ms, the 10th percentile of the last 2 s's;
 * Firefox's moved to when the sample is heard) — or, with `globalThis.tapLatencyMs` set (Firefox on a sound
 * server, whose first read of a context's output latency can deadlock it: docs/media-plane.md, "In Firefox"),
 * never asking the context: the page time less `currentTime` plus that latency, which the bench asks of the
 * sound server. Resolves with
 * `{ actx, onset, tap }`: give `actx` and `tap` to a player as its `audioContext` / `audioOutput`, or connect
 * another source to `onset`.
 *
 * @module
 */
export const ONSET_TAP = `
globalThis.onsetTap = async (onsets) => {
  const actx = new AudioContext({ latencyHint: "interactive", sampleRate: 48000 });
  const code = "class Onset extends AudioWorkletProcessor { constructor() { super(); this.quiet = sampleRate; }" +
    " process(inputs) { const x = inputs[0] && inputs[0][0];" +
    // (the context's start and no input — before a player's sound is connected: Chromium gives a node without
    // an active source no channels — are quiet: a viewer joining speech had its first sound heard only after
    // a pause)
    " if (!x) { this.quiet += 128; return true; }" +
    " for (let i = 0; i < x.length; i++) { const loud = Math.abs(x[i]) > 0.01;" +
    " if (loud && this.quiet >= sampleRate * 0.15) this.port.postMessage(currentFrame + i);" +
    " this.quiet = loud ? 0 : this.quiet + 1; } return true; } } registerProcessor('onset', Onset);";
  await actx.audioWorklet.addModule(URL.createObjectURL(new Blob([code], { type: "text/javascript" })));
  const onset = new AudioWorkletNode(actx, "onset");
  const mute = actx.createGain(); mute.gain.value = 0;
  onset.connect(mute).connect(actx.destination);
  // A frame of the context is heard at: performanceTime + (frame / rate - contextTime) (its output stamp);
  // Firefox moves both of its stamp's times back by its output latency (then the page time is as far behind
  // now as the context time behind currentTime): its frames are heard that much later than it says. And
  // Firefox pairs the context time of its last audio callback with a page time of now: a stamp read between
  // two callbacks puts the sound late by up to a callback's block (~19 ms on a PulseAudio sink). So the
  // stamps are read every 10 ms, and an onset is placed with the 10th percentile of the last 2 s's offsets
  // (page time − context time; a stray reading 5–17 ms below the rest comes about once in 250). Chromium's
  // stamps agree within 0.5 ms: nothing changes there.
  const offsets = [];
  const fixed = globalThis.tapLatencyMs;
  const read = () => {
    if (typeof fixed === "number") {
      // (Firefox's stamp amounts to this: its page time as far behind now as its context time behind currentTime)
      if (actx.state !== "running") return;
      offsets.push(performance.now() - actx.currentTime * 1000 + fixed);
      if (offsets.length > 200) offsets.shift();
      return;
    }
    const ts = actx.getOutputTimestamp();
    if (!(ts.contextTime > 0) || !ts.performanceTime) return;
    const lead = (actx.currentTime - ts.contextTime) * 1000;
    const moved = lead > 1 && Math.abs(performance.now() - ts.performanceTime - lead) < 1 ? lead : 0;
    offsets.push(ts.performanceTime + moved - ts.contextTime * 1000);
    if (offsets.length > 200) offsets.shift();
  };
  setInterval(read, 10);
  const heard = (frame) => {
    read();
    const sorted = [...offsets].sort((a, b) => a - b);
    return performance.timeOrigin + sorted[Math.floor(sorted.length / 10)] + frame / actx.sampleRate * 1000;
  };
  onset.port.onmessage = (e) => onsets.push(heard(e.data));
  const tap = actx.createGain();
  tap.connect(actx.destination);
  tap.connect(onset);
  return { actx, onset, tap };
};
`;
