/**
 * The animation track's pacing towards Janus's data channel: a message leaves when its stamp is due (the
 * audio's lead early, at once when late), in stamp order; barge-in drops what is stamped after the cut and
 * not yet sent; the latest face and head are kept for joiners.
 */
import assert from "node:assert/strict";
import { AnimationChannel } from "../../src/media/transports/webrtc_sfu/animation_channel.ts";
import type { AnimationMessage } from "../../src/media/transports/transport.ts";

function channel() {
  let now = 1000;
  const sent: AnimationMessage[] = [];
  const ch = new AnimationChannel({
    send: (text) => sent.push(JSON.parse(text)),
    timelineMs: () => now,
    leadMs: 10,
  });
  return { ch, sent, set: (t: number) => now = t };
}

async function until(ok: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error("condition not reached in time");
    await new Promise((r) => setTimeout(r, 5));
  }
}

Deno.test("animation channel: due or late messages leave at once, later ones when due, in stamp order", async () => {
  const { ch, sent, set } = channel();
  try {
    ch.push({ type: "viseme", t_ms: 900, viseme: "aa" }); // late
    ch.push({ type: "head", t_ms: 1008, dx: 1, dy: 0 }); // within the lead
    assert.deepEqual(sent.map((m) => m.t_ms), [900, 1008]);
    ch.push({ type: "viseme", t_ms: 1060, viseme: "PP" });
    ch.push({ type: "viseme", t_ms: 1040, viseme: "E" });
    assert.equal(sent.length, 2, "not due yet");
    set(1055); // both due now: the timer sends them, earliest stamp first
    await until(() => sent.length === 4);
    assert.deepEqual(sent.map((m) => m.t_ms), [900, 1008, 1040, 1060]);
    assert.equal(ch.sent, 4);
  } finally {
    ch.close();
  }
});

Deno.test("animation channel: barge-in drops the unsent messages after the cut; joiners get the latest state", async () => {
  const { ch, sent, set } = channel();
  try {
    ch.push({ type: "face", t_ms: 995, state: "speaking", eyes: "open", look: "neutral" });
    ch.push({ type: "viseme", t_ms: 1030, viseme: "aa" });
    ch.push({ type: "viseme", t_ms: 1200, viseme: "oh" });
    ch.interrupt(1100);
    set(1300);
    ch.push({ type: "viseme", t_ms: 1300, viseme: "sil" }); // wakes the pacer: all due now
    await until(() => sent.length >= 3);
    await new Promise((r) => setTimeout(r, 30));
    assert.deepEqual(sent.map((m) => m.t_ms), [995, 1030, 1300], "the cut viseme never left");
    assert.deepEqual(ch.latest().map((m) => m.type).sort(), ["face", "viseme"]);
  } finally {
    ch.close();
  }
});
