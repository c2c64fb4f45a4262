/**
 * The animation track's pacing towards Janus's data channel: a message leaves when its stamp is due (the
 * audio's lead early, at once when late), in stamp order; barge-in drops what is stamped after the cut and
 * not yet sent; the latest face and head are kept for joiners; each datagram carries the two messages sent
 * before it, and the last one goes again when nothing follows it (the channel is lossy).
 */
import assert from "node:assert/strict";
import { AnimationChannel } from "../../src/media/transports/webrtc_sfu/animation_channel.ts";
import type { AnimationMessage } from "../../src/media/transports/transport.ts";

// deno-lint-ignore no-explicit-any
type Datagram = AnimationMessage & { prev?: AnimationMessage[]; repeat?: boolean } & Record<string, any>;

function channel() {
  let now = 1000;
  /** First sends, as a client reads them (what the channel added taken off). */
  const sent: AnimationMessage[] = [];
  const datagrams: Datagram[] = [];
  const ch = new AnimationChannel({
    send: (text) => {
      const d = JSON.parse(text) as Datagram;
      datagrams.push(d);
      if (d.repeat) return;
      const { prev: _p, repeat: _r, ...m } = d;
      sent.push(m as AnimationMessage);
    },
    timelineMs: () => now,
    leadMs: 10,
  });
  return { ch, sent, datagrams, set: (t: number) => now = t };
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

Deno.test("animation channel: each datagram carries the two messages sent before it, and the last one goes again when nothing follows it (a lost datagram's message arrives with the next)", async () => {
  const { ch, datagrams, set } = channel();
  try {
    ch.push({ type: "viseme", t_ms: 990, viseme: "aa" });
    ch.push({ type: "viseme", t_ms: 995, viseme: "PP" });
    ch.push({ type: "viseme", t_ms: 1000, viseme: "E" });
    ch.push({ type: "head", t_ms: 1005, dx: 1, dy: 0 });
    assert.deepEqual(
      datagrams.map((d) => [d.t_ms, (d.prev ?? []).map((p) => p.t_ms)]),
      [[990, []], [995, [990]], [1000, [990, 995]], [1005, [995, 1000]]],
    );
    // Nothing follows 1005: it goes once more, marked as a repeat, with what it carried.
    await until(() => datagrams.length === 5);
    assert.deepEqual(datagrams[4], { ...datagrams[3], repeat: true });
    await new Promise((r) => setTimeout(r, 120));
    assert.equal(datagrams.length, 5, "repeated once");
    assert.equal(ch.sent, 4, "messages, not datagrams");
    // A barge-in: nothing stamped after the cut goes again.
    set(1100);
    ch.push({ type: "viseme", t_ms: 1100, viseme: "oh" });
    ch.interrupt(1050);
    await new Promise((r) => setTimeout(r, 120));
    assert.equal(datagrams.length, 6, "the cut message was not repeated");
    ch.push({ type: "viseme", t_ms: 1100, viseme: "sil" });
    assert.deepEqual(datagrams[6].prev?.map((p) => p.t_ms), [1005], "nor carried again");
  } finally {
    ch.close();
  }
});
