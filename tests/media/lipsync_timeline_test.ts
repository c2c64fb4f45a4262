/**
 * The viseme timeline's change stream (what video-free clients get): a step is stamped with its decided
 * viseme, never with `sil` because its response's frames were not decided yet when the timeline was written.
 */
import assert from "node:assert/strict";
import { type TimelineViseme, VisemeTimeline } from "../../src/media/lipsync/timeline.ts";
import { VISEME_INDEX } from "../../src/media/lipsync/visemes.ts";

const RATE = 48000;
const ms = (x: number) => x * RATE / 1000;

Deno.test("viseme timeline: speech written before its first decision is stamped when decided, from its start", () => {
  const tl = new VisemeTimeline(RATE);
  const got: TimelineViseme[] = [];
  tl.subscribe((v) => got.push(v));
  tl.written(ms(100)); // silence up to 100 ms
  // A real-time engine's first 100 ms of speech, written at 100 ms before the lip sync decided any frame.
  tl.placed("r1", 0, ms(100), ms(100));
  tl.written(ms(200));
  assert.deepEqual(got.filter((v) => v.viseme !== "sil"), [], "nothing decided yet: nothing stamped");
  // The deadline decisions come: the response opens on its first frame.
  for (let f = 0; f < 10; f++) {
    tl.frame({ responseId: "r1", frame: f, viseme: "aa", index: VISEME_INDEX.aa, source: "audio" });
  }
  const open = got.find((v) => v.viseme === "aa");
  assert.ok(open, "the opening is stamped");
  assert.equal(open.t_ms, 100, "at the speech's first sample, not where the timeline was written to");
});

Deno.test("viseme timeline: an interrupted response's placed speech reads as silence, and the stream goes on", () => {
  const tl = new VisemeTimeline(RATE);
  const got: TimelineViseme[] = [];
  tl.subscribe((v) => got.push(v));
  tl.placed("r1", 0, 0, ms(100));
  tl.frame({ responseId: "r1", frame: 0, viseme: "aa", index: VISEME_INDEX.aa, source: "audio" });
  tl.interrupt("r1");
  assert.equal(tl.targetAt(50), VISEME_INDEX.sil);
  tl.placed("r2", 0, ms(100), ms(50));
  for (let f = 0; f < 5; f++) {
    tl.frame({ responseId: "r2", frame: f, viseme: "oh", index: VISEME_INDEX.oh, source: "audio" });
  }
  tl.written(ms(150));
  assert.equal(got.at(-1)?.viseme, "oh");
  assert.equal(got.at(-1)?.t_ms, 100);
});

Deno.test("viseme timeline: a response whose frames never come does not stop the stream", () => {
  const tl = new VisemeTimeline(RATE);
  const got: TimelineViseme[] = [];
  tl.subscribe((v) => got.push(v));
  tl.placed("r1", 0, 0, ms(100)); // never decided
  tl.placed("r2", 0, ms(500), ms(100));
  for (let f = 0; f < 10; f++) {
    tl.frame({ responseId: "r2", frame: f, viseme: "E", index: VISEME_INDEX.E, source: "audio" });
  }
  tl.written(ms(600));
  assert.ok(
    got.some((v) => v.viseme === "E" && v.t_ms === 500),
    JSON.stringify(got.map((v) => [v.t_ms, v.viseme])),
  );
});

Deno.test("viseme timeline: each change is stamped where the response's frame starts, however the stream's 10 ms steps fall (a response placed 2 samples past a step was stamped 10 ms late)", () => {
  for (const offset of [2, 100, 479]) {
    const tl = new VisemeTimeline(RATE);
    const got: TimelineViseme[] = [];
    tl.subscribe((v) => got.push(v));
    // Speech from 100 ms + `offset` samples: "aa" for 30 ms, then "PP" for 20 ms, then "E".
    const at = ms(100) + offset;
    tl.placed("r1", 0, at, ms(100));
    const seq = ["aa", "aa", "aa", "PP", "PP", "E", "E", "E", "E", "E"] as const;
    seq.forEach((v, f) =>
      tl.frame({ responseId: "r1", frame: f, viseme: v, index: VISEME_INDEX[v], source: "audio" })
    );
    tl.written(ms(300));
    const stamps = got.filter((v) => v.viseme !== "sil").map((v) => [v.viseme, v.t_ms]);
    const t0 = at * 1000 / RATE;
    assert.deepEqual(
      stamps,
      [["aa", Math.round(t0)], ["PP", Math.round(t0 + 30)], ["E", Math.round(t0 + 50)]],
      `offset ${offset} samples`,
    );
    assert.equal(got.at(-1)?.viseme, "sil", "and the silence after it");
    assert.equal(got.at(-1)?.t_ms, Math.round(t0 + 100));
  }
});

Deno.test("viseme timeline: ahead of an instant, the speech still to come of a response that goes on continues the instant's mouth (a real-time engine's onset opens the frame that shows it)", () => {
  const weights = (continues: boolean) => {
    const tl = new VisemeTimeline(RATE);
    tl.written(ms(100));
    // A response's first 20 ms are placed at 100 ms and decided "aa"; nothing after it is written yet.
    tl.placed("r1", 0, ms(100), ms(20));
    tl.frame({ responseId: "r1", frame: 0, viseme: "aa", index: VISEME_INDEX.aa, source: "audio" });
    tl.frame({ responseId: "r1", frame: 1, viseme: "aa", index: VISEME_INDEX.aa, source: "audio" });
    tl.written(ms(120));
    tl.queued(null, false, continues);
    return tl.weightsAt(110)[VISEME_INDEX.aa];
  };
  const goesOn = weights(true), ended = weights(false);
  // 10 ms into the speech: the silence before it weighs against the opening; what comes next is its own.
  assert.ok(goesOn >= 0.65, `aa ${goesOn.toFixed(2)} while the response goes on`);
  // A response that ended there is followed by silence: the mouth is already closing.
  assert.ok(
    ended < goesOn - 0.1,
    `aa ${ended.toFixed(2)} when it ended, ${goesOn.toFixed(2)} when it goes on`,
  );
});

Deno.test("viseme timeline: silence taken back (a paced transport's, never sent) and replaced by speech is stamped where the speech starts, not where the silence had reached", () => {
  const tl = new VisemeTimeline(RATE);
  const got: TimelineViseme[] = [];
  tl.subscribe((v) => got.push(v));
  tl.written(ms(200)); // silence up to 200 ms, its changes emitted
  tl.rewind(ms(150)); // the last 50 ms of it taken back: a response's speech goes there
  tl.placed("r1", 0, ms(150), ms(100));
  tl.written(ms(250));
  for (let f = 0; f < 10; f++) {
    tl.frame({ responseId: "r1", frame: f, viseme: "aa", index: VISEME_INDEX.aa, source: "audio" });
  }
  const open = got.find((v) => v.viseme === "aa");
  assert.ok(open, "the opening is stamped");
  assert.equal(
    open.t_ms,
    150,
    "at the speech's first sample (without the rewind: 200, where the silence had reached)",
  );
  tl.rewind(ms(300)); // past what is written: nothing to take back
  tl.written(ms(260));
  assert.equal(got.filter((v) => v.viseme === "aa").length, 1);
});
