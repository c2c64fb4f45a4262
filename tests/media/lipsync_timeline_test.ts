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
