/**
 * Units of the media plane: demuxers, the fMP4 writer, the playout queue, the resampler, lip sync,
 * blinks, the frame cache, colour conversion and the catalog check.
 */
import assert from "node:assert/strict";
import { ApiError } from "../../src/errors.ts";
import { CATALOG } from "../../src/media/catalog.ts";
import { resolveAvatarConfig } from "../../src/vocabulary/avatar_catalog.ts";
import { FlvDemuxer } from "../../src/media/flv.ts";
import { mediaSegment } from "../../src/media/transports/ws_fmp4/fmp4.ts";
import { FrameCache } from "../../src/media/frame_cache.ts";
import { analyse, LipSync } from "../../bench/lipsync/loudness.ts";
import { Blinker } from "../../src/media/motion.ts";
import { OggOpusDemuxer, opusPacketSamples } from "../../src/media/ogg_opus.ts";
import { INITIAL_RING_SAMPLES, PlayoutQueue } from "../../src/media/playout_queue.ts";
import { LinearResampler } from "../../src/media/resample.ts";
import { rgbaToI420 } from "../../src/media/yuv.ts";
import { tone } from "../../testing/fake_bridge.ts";
import { readSegment } from "../../testing/media.ts";

function flvTag(type: number, body: Uint8Array, ts: number): Uint8Array {
  const t = new Uint8Array(11 + body.length + 4);
  t[0] = type;
  t[1] = body.length >> 16;
  t[2] = (body.length >> 8) & 0xff;
  t[3] = body.length & 0xff;
  t[4] = (ts >> 16) & 0xff;
  t[5] = (ts >> 8) & 0xff;
  t[6] = ts & 0xff;
  t.set(body, 11);
  new DataView(t.buffer).setUint32(11 + body.length, 11 + body.length);
  return t;
}

Deno.test("flv: config and access units come out whole, whatever the chunking", () => {
  const header = new Uint8Array([0x46, 0x4c, 0x56, 1, 1, 0, 0, 0, 9, 0, 0, 0, 0]);
  const config = flvTag(9, new Uint8Array([0x17, 0, 0, 0, 0, 1, 0x42, 0xc0, 0x1e]), 0);
  const key = flvTag(9, new Uint8Array([0x17, 1, 0, 0, 0, 0, 0, 0, 2, 0x65, 0x88]), 0);
  const inter = flvTag(9, new Uint8Array([0x27, 1, 0, 0, 0, 0, 0, 0, 1, 0x41]), 40);
  const stream = new Uint8Array([...header, ...config, ...key, ...inter]);
  for (const step of [1, 7, stream.length]) {
    const got: string[] = [];
    const d = new FlvDemuxer({
      onConfig: (c) => got.push(`config ${c.length}`),
      onAccessUnit: (au) => got.push(`${au.key ? "key" : "inter"} ${au.data.length} @${au.dtsMs}`),
    });
    for (let o = 0; o < stream.length; o += step) d.push(stream.subarray(o, o + step));
    assert.deepEqual(got, ["config 4", "key 6 @0", "inter 5 @40"], `step ${step}`);
  }
  assert.throws(() => new FlvDemuxer({ onConfig() {}, onAccessUnit() {} }).push(new Uint8Array(13)));
});

function oggPage(packets: Uint8Array[], seq: number): Uint8Array {
  const lacing: number[] = [];
  for (const p of packets) {
    let n = p.length;
    while (n >= 255) {
      lacing.push(255);
      n -= 255;
    }
    lacing.push(n);
  }
  const body = packets.reduce((a, p) => a + p.length, 0);
  const page = new Uint8Array(27 + lacing.length + body);
  page.set([0x4f, 0x67, 0x67, 0x53]);
  new DataView(page.buffer).setUint32(18, seq, true);
  page[26] = lacing.length;
  page.set(lacing, 27);
  let o = 27 + lacing.length;
  for (const p of packets) {
    page.set(p, o);
    o += p.length;
  }
  return page;
}

Deno.test("ogg opus: the head, then packets (a 300-byte one spans lacing values) with their durations", () => {
  const head = new Uint8Array(19);
  head.set(new TextEncoder().encode("OpusHead"));
  head[8] = 1;
  head[9] = 1;
  new DataView(head.buffer).setUint16(10, 120, true);
  new DataView(head.buffer).setUint32(12, 48000, true);
  const tags = new TextEncoder().encode("OpusTags........");
  const celt10 = new Uint8Array(300).fill(7);
  celt10[0] = (26 << 3) | 0; // CELT FB 10 ms, one frame
  const two20 = new Uint8Array([(27 << 3) | 1, 1, 2]); // CELT 20 ms, two frames
  const stream = new Uint8Array([
    ...oggPage([head], 0),
    ...oggPage([tags], 1),
    ...oggPage([celt10, two20], 2),
  ]);
  const got: string[] = [];
  const d = new OggOpusDemuxer({
    onHead: (h) => got.push(`head ${h.channels} ${h.preSkip} ${h.inputSampleRate}`),
    onPacket: (p, n) => got.push(`packet ${p.length} ${n}`),
  });
  for (let o = 0; o < stream.length; o += 50) d.push(stream.subarray(o, o + 50));
  assert.deepEqual(got, ["head 1 120 48000", "packet 300 480", "packet 3 1920"]);
  assert.equal(opusPacketSamples(new Uint8Array([(1 << 3) | 0])), 960); // SILK 20 ms
});

Deno.test("fmp4: a media segment's trun offset points at its mdat payload", () => {
  const a = new Uint8Array([1, 2, 3]);
  const b = new Uint8Array([4, 5]);
  const seg = mediaSegment(7, 2, 96_000, [{ data: a, duration: 480, key: true }, {
    data: b,
    duration: 480,
    key: true,
  }]);
  const r = readSegment(seg)!;
  assert.deepEqual([r.track, r.baseTime, r.durations, r.key], [2, 96_000, [480, 480], true]);
  const dv = new DataView(seg.buffer);
  const moofSize = dv.getUint32(0);
  assert.equal(new TextDecoder().decode(seg.subarray(moofSize + 4, moofSize + 8)), "mdat");
  // trun is the last box of the moof: its data_offset field sits 4 bytes after its sample count
  const trunAt = moofSize - (8 + 4 + 4 + 4 + 2 * 12);
  assert.equal(new TextDecoder().decode(seg.subarray(trunAt + 4, trunAt + 8)), "trun");
  const offset = dv.getUint32(trunAt + 16);
  assert.deepEqual([...seg.subarray(offset, offset + 5)], [1, 2, 3, 4, 5]);
  const inter = readSegment(mediaSegment(8, 1, 0, [{ data: a, duration: 3600, key: false }]))!;
  assert.equal(inter.key, false);
});

Deno.test("playout queue: take, peek, done → played report, interrupt drops at once, bounded length", () => {
  const reports: [string, number, boolean][] = [];
  const q = new PlayoutQueue({ sampleRate: 1000, maxSamples: 50, onPlayed: (...r) => reports.push(r) });
  q.start("r1");
  q.push("r1", new Int16Array(10).fill(1));
  q.push("r1", new Int16Array(10).fill(2));
  assert.equal(q.length, 20);
  assert.equal(q.settled, false);
  const peek = new Int16Array(4);
  assert.equal(q.peek(peek, 0, 8, 4), 4);
  assert.deepEqual([...peek], [1, 1, 2, 2]);
  const out = new Int16Array(15);
  assert.equal(q.take(out, 0, 15), 15);
  q.done("r1");
  assert.equal(q.settled, true);
  assert.deepEqual(reports, []);
  q.take(out, 0, 15);
  assert.deepEqual(reports, [["r1", 20, false]]);
  q.push("r1", new Int16Array(5)); // late audio of a finished response is ignored
  assert.equal(q.length, 0);

  q.start("r2");
  q.push("r2", new Int16Array(30));
  q.take(out, 0, 7);
  assert.equal(q.interrupt("r2"), 23);
  assert.equal(q.length, 0);
  assert.deepEqual(reports.at(-1), ["r2", 7, true]);
  q.push("r2", new Int16Array(5));
  assert.equal(q.length, 0, "audio after the interrupt is dropped");

  q.start("r3");
  q.push("r3", new Int16Array(40));
  q.push("r3", new Int16Array(40));
  assert.equal(q.length, 50);
  assert.equal(q.overflowDropped, 30);
});

Deno.test("playout queue: its ring gives back exactly what was pushed — across its end, growing, after barge-in holes, at the bound", () => {
  // A model: one record per queued sample. Random pushes (the pushed array reused at once), takes, peeks
  // and interrupts of interleaved responses; the queue must agree with the model after every step.
  let seed = 7;
  const rand = (n: number) => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) % n;
  const max = 60_000;
  const q = new PlayoutQueue({ sampleRate: 48000, maxSamples: max, onPlayed: () => {} });
  let model: { id: string; v: number; pos: number }[] = [];
  const pushed = new Map<string, number>();
  let next = 0, responses = 0, grown = 0;
  let live = ["r0", "r1"];
  for (const id of live) q.start(id);
  const scratch = new Int16Array(20_000);
  for (let step = 0; step < 3000; step++) {
    const op = rand(10);
    if (op < 5) {
      const id = live[rand(live.length)];
      const n = 1 + rand(op === 0 ? 19_000 : 1500);
      const pos = pushed.get(id) ?? 0;
      for (let i = 0; i < n; i++) scratch[i] = (next + i) % 30_000;
      q.push(id, scratch.subarray(0, n));
      scratch.fill(-1); // the caller reuses its array
      for (let i = 0; i < n; i++) model.push({ id, v: (next + i) % 30_000, pos: pos + i });
      next += n;
      pushed.set(id, pos + n);
      if (model.length > max) model = model.slice(model.length - max);
      grown = Math.max(grown, q.capacity);
    } else if (op < 8) {
      const n = rand(3000);
      const out = new Int16Array(n + 5).fill(-2);
      const spans: [string, number, number, number][] = [];
      const got = q.take(out, 5, n, (...s) => spans.push(s));
      const want = model.splice(0, Math.min(n, model.length));
      assert.equal(got, want.length);
      assert.deepEqual([...out.subarray(5, 5 + got)], want.map((m) => m.v), `step ${step}: taken samples`);
      let k = 0;
      for (const [id, from, outAt, len] of spans) {
        assert.equal(outAt, 5 + k);
        for (let i = 0; i < len; i++) assert.ok(want[k + i].id === id && want[k + i].pos === from + i);
        k += len;
      }
    } else if (op === 8) {
      const skip = rand(2000), n = rand(2000);
      const out = new Int16Array(n);
      const got = q.peek(out, 0, skip, n);
      assert.deepEqual(
        [...out.subarray(0, got)],
        model.slice(skip, skip + n).map((m) => m.v),
        `step ${step}: peek`,
      );
    } else {
      const id = live[rand(live.length)];
      const dropped = q.interrupt(id);
      const before = model.length;
      model = model.filter((m) => m.id !== id);
      assert.equal(dropped, before - model.length, `step ${step}: interrupt`);
      const fresh = `r${live.length + ++responses}`;
      q.start(fresh);
      live = [...live.filter((x) => x !== id), fresh];
    }
    assert.equal(q.length, model.length, `step ${step}: length`);
    const run = q.headRun();
    if (model.length === 0) assert.equal(run, null);
    else assert.deepEqual([run!.responseId, run!.from], [model[0].id, model[0].pos]);
    if (model.length === 0) {
      assert.equal(q.capacity, INITIAL_RING_SAMPLES, "an empty queue gives its ring back");
    }
  }
  assert.ok(grown >= 4 * INITIAL_RING_SAMPLES, `the ring grew (to ${grown} samples)`);
  assert.ok(q.overflowDropped > 0, "the bound dropped audio");
});

Deno.test("resampler: 24 kHz → 48 kHz doubles the length, keeps the waveform, is seamless across chunks", () => {
  const input = tone(2400, 24000, 440, 10000);
  const whole = new LinearResampler(24000, 48000).process(input);
  const r = new LinearResampler(24000, 48000);
  const parts = [
    r.process(input.subarray(0, 1000)),
    r.process(input.subarray(1000, 1001)),
    r.process(input.subarray(1001)),
  ];
  const joined = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    joined.set(p, o);
    o += p.length;
  }
  assert.ok(Math.abs(whole.length - 4800) <= 2);
  assert.deepEqual([...joined], [...whole]);
  const expected = tone(4800, 48000, 440, 10000);
  let maxErr = 0;
  for (let i = 0; i < whole.length; i++) maxErr = Math.max(maxErr, Math.abs(whole[i] - expected[i]));
  assert.ok(maxErr < 300, `max error ${maxErr}`);
  assert.equal(new LinearResampler(48000, 48000).process(input).length, input.length);
});

Deno.test("resampler: the integer path of an exact doubling gives the general loop's samples, whatever the chunking", () => {
  let seed = 11;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const input = new Int16Array(24000);
  // Noise over the whole range (halves of both signs, the extremes), then a tone.
  for (let i = 0; i < input.length; i++) {
    input[i] = i < 12000 ? Math.floor(rand() * 65536) - 32768 : Math.round(9000 * Math.sin(i / 7));
  }
  input[100] = 32767, input[101] = 32767, input[102] = -32768, input[103] = -32768, input[104] = -32767;
  const fast = new LinearResampler(24000, 48000),
    general = new LinearResampler(24000, 48000, { generic: true });
  let total = 0;
  for (let at = 0; at < input.length;) {
    // Chunks of 1 to 700 samples (1 and 2 exercise the carried position and last sample).
    const n = rand() < 0.1 ? 1 + Math.floor(rand() * 2) : 1 + Math.floor(rand() * 700);
    const chunk = input.subarray(at, at + n);
    const a = fast.process(chunk), b = general.process(chunk);
    assert.deepEqual([...a], [...b], `chunk at ${at}`);
    assert.equal(a.length, a.buffer.byteLength / 2, "an array of the exact size");
    total += a.length;
    at += n;
  }
  assert.ok(Math.abs(total - 48000) <= 2, `${total} samples`);
});

Deno.test("loudness lip sync (the bench baseline): silence rests, speech opens the mouth, the release takes a few frames", () => {
  const lips = new LipSync();
  assert.equal(lips.next(analyse(new Int16Array(1920), 48000)), "rest");
  const loud = lips.next(analyse(tone(1920, 48000, 200, 12000), 48000));
  assert.ok(["open", "wide", "oo"].includes(loud), loud);
  const after = lips.next(analyse(new Int16Array(1920), 48000));
  assert.notEqual(after, "rest", "one silent frame does not snap the mouth shut");
  let shape = after;
  for (let i = 0; i < 10; i++) shape = lips.next(analyse(new Int16Array(1920), 48000));
  assert.equal(shape, "rest");
  const hiss = new Int16Array(1920).map((_, i) => (i % 2 ? 4000 : -4000));
  assert.equal(new LipSync().next(analyse(hiss, 48000)), "ee");
  assert.equal(analyse(new Int16Array(0), 48000).db, -120);
});

Deno.test("blinks: every 2–6 s, 160 ms long, deterministic per seed", () => {
  const states = (seed: number) => {
    const b = new Blinker(seed);
    const out: string[] = [];
    for (let t = 0; t < 30_000; t += 40) out.push(b.at(t));
    return out;
  };
  const a = states(42);
  assert.deepEqual(a, states(42));
  assert.notDeepEqual(a, states(43));
  const starts = a.map((s, i) => s !== "open" && a[i - 1] === "open" ? i * 40 : -1).filter((t) => t >= 0);
  assert.ok(starts.length >= 5 && starts.length <= 15, `${starts.length} blinks in 30 s`);
  for (let i = 1; i < starts.length; i++) assert.ok(starts[i] - starts[i - 1] >= 2000 - 40);
  assert.ok(a.includes("closed") && a.includes("half"));
});

Deno.test("frame cache: hits, LRU eviction within the byte budget", () => {
  const c = new FrameCache(30);
  let made = 0;
  const make = () => {
    made++;
    return new Uint8Array(10);
  };
  c.get("a", make);
  c.get("b", make);
  c.get("c", make);
  c.get("a", make); // hit, now most recent
  c.get("d", make); // evicts b
  assert.equal(made, 4);
  assert.equal(c.bytes, 30);
  c.get("b", make);
  assert.equal(made, 5);
  assert.equal(c.hits, 1);
});

Deno.test("yuv: BT.709 limited range for black, white and red", () => {
  const px = (r: number, g: number, b: number) => {
    const rgba = new Uint8Array(4 * 4);
    for (let i = 0; i < 4; i++) rgba.set([r, g, b, 255], i * 4);
    return [...rgbaToI420(rgba, 2, 2)];
  };
  assert.deepEqual(px(0, 0, 0), [16, 16, 16, 16, 128, 128]);
  assert.deepEqual(px(255, 255, 255), [235, 235, 235, 235, 128, 128]);
  assert.deepEqual(px(255, 0, 0), [63, 63, 63, 63, 102, 240]);
});

Deno.test("catalog: defaults for omitted ids, 400 SVC_RENDER_MISCONFIGURED for unknown ones", () => {
  assert.ok(CATALOG.avatars.length >= 3 && CATALOG.backgrounds.length >= 3);
  assert.deepEqual(resolveAvatarConfig(CATALOG, undefined), { avatarId: "ada", bgId: "studio" });
  assert.deepEqual(resolveAvatarConfig(CATALOG, { bg_id: "office" }), { avatarId: "ada", bgId: "office" });
  for (const bad of [{ avatar_id: "nobody" }, { bg_id: "moon" }]) {
    assert.throws(
      () => resolveAvatarConfig(CATALOG, bad),
      (e) => e instanceof ApiError && e.status === 400 && e.code === "SVC_RENDER_MISCONFIGURED",
    );
  }
});
