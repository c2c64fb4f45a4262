/**
 * Live lip sync as good as offline on an engine speaking in real time (issue 33): the same utterances, audio
 * alone, scored offline (`lipSyncRecording`, what `deno task lipsync --audio` gives) and as the viseme track
 * a video-free client of a live session is sent while the engine sends them strictly in real time
 * (`bench/lipsync/realtime.ts`, which `bench:lipsync` runs on Festival's held-out voices). espeak-ng's bench
 * voices here (the held-out voices are for the bench only). Before, the track's changes were stamped on
 * a 10 ms grid that began wherever the client subscribed, not where the response's frames begin: a response
 * placed 2 samples off that grid had every change stamped 10 ms late (−0.041 of 7-class accuracy here, the
 * frames themselves identical to the offline ones). With only video-free clients the visemes are also decided
 * 20 ms later than a video frame's deadline forces (`VIDEO_FREE_DECISION_DELAY_MS`: −0.020 → −0.014).
 */
import assert from "node:assert/strict";
import { EspeakLib } from "../../src/speech/espeak_lib.ts";
import { BENCH_SENTENCES, espeakUtterance } from "../../bench/lipsync/corpus.ts";
import { benchRealtime } from "../../bench/lipsync/realtime.ts";

const lib = EspeakLib.open();
const utterances = [
  espeakUtterance(lib, "a", BENCH_SENTENCES.en[0], { voice: "en-us+m8", rate: 165 }, "en"),
  espeakUtterance(lib, "b", BENCH_SENTENCES.en[1], { voice: "en-us+f5", rate: 175 }, "en"),
  espeakUtterance(lib, "c", BENCH_SENTENCES.en[3], { voice: "en-us+klatt4", rate: 160 }, "en"),
];

Deno.test("lip sync, real-time engine: the track a video-free client is sent scores within 0.03 of the offline analysis of the same audio", async () => {
  const r = await benchRealtime({ utterances });
  const msg = JSON.stringify(r);
  assert.equal(r.utterances, utterances.length);
  assert.ok(r.offline.acc7 > 0.5, `the offline analysis works on these voices: ${msg}`);
  assert.ok(Math.abs(r.difference.acc7) <= 0.03, `7-class accuracy, live − offline: ${msg}`);
  assert.ok(r.difference.recall >= -0.03, `closure recall, live − offline: ${msg}`);
  assert.ok(r.difference.precision >= -0.03, `closure precision, live − offline: ${msg}`);
});
