import assert from "node:assert/strict";
import { bearerTokenMatches, timingSafeEqual } from "../../engine/auth.ts";
import { PacedSender } from "../../engine/playout.ts";
import { parseBridgeMessage, validateSessionStart } from "../../src/speech/v0_protocol.ts";
import { installReflectMetadata } from "../../engine/reflect_metadata.ts";
import { until } from "../../testing/deadline.ts";

Deno.test("auth: bearer token comparison", async () => {
  assert.equal(await bearerTokenMatches("Bearer abc", "abc"), true);
  assert.equal(await bearerTokenMatches("bearer   abc ", "abc"), true);
  assert.equal(await bearerTokenMatches("Bearer abcd", "abc"), false);
  assert.equal(await bearerTokenMatches("Bearer ab", "abc"), false);
  assert.equal(await bearerTokenMatches("Basic abc", "abc"), false);
  assert.equal(await bearerTokenMatches("abc", "abc"), false);
  assert.equal(await bearerTokenMatches(null, "abc"), false);
  assert.equal(await bearerTokenMatches("Bearer ", ""), false);
  assert.equal(timingSafeEqual(new Uint8Array([1, 2]), new Uint8Array([1, 2])), true);
  assert.equal(timingSafeEqual(new Uint8Array([1, 2]), new Uint8Array([1, 3])), false);
  assert.equal(timingSafeEqual(new Uint8Array([1]), new Uint8Array([1, 0])), false);
});

Deno.test("protocol: parsing text frames", () => {
  assert.deepEqual(parseBridgeMessage('{"type":"ping","id":1}'), {
    ok: true,
    message: { type: "ping", id: 1 },
  });
  for (
    const bad of [
      "nope",
      "[1]",
      '"x"',
      "null",
      '{"id":1}',
      '{"type":""}',
      `{"type":"x","p":"${"é".repeat(33000)}"}`,
    ]
  ) {
    assert.equal(parseBridgeMessage(bad).ok, false, bad.slice(0, 20));
  }
});

Deno.test("protocol: session.start validation", () => {
  const base = {
    type: "session.start",
    protocol: "v0",
    session_id: "session:1",
    audio: { input: { encoding: "pcm_s16le", sample_rate: 24000, channels: 1 } },
  };
  const ok = validateSessionStart(base);
  assert.ok(ok.ok);
  assert.equal(ok.start.inputSampleRate, 24000);
  assert.equal(ok.start.preferredOutputSampleRate, null);
  const check = (patch: Record<string, unknown>, code: string, closeCode: number) => {
    const r = validateSessionStart({ ...base, ...patch });
    assert.ok(!r.ok, JSON.stringify(patch));
    assert.equal(r.code, code, JSON.stringify(patch));
    assert.equal(r.closeCode, closeCode, JSON.stringify(patch));
  };
  check({ protocol: undefined }, "invalid_message", 4002);
  check({ protocol: "v1" }, "unsupported_protocol", 4003);
  check({ session_id: "" }, "invalid_message", 4002);
  check({ audio: undefined }, "bad_audio_format", 4003);
  check(
    { audio: { input: { encoding: "pcm_s16le", sample_rate: 22050.5, channels: 1 } } },
    "bad_audio_format",
    4003,
  );
  check(
    { audio: { input: { encoding: "pcm_s16le", sample_rate: 7999, channels: 1 } } },
    "bad_audio_format",
    4003,
  );
  check(
    { audio: { input: { encoding: "pcm_s16le", sample_rate: 48001, channels: 1 } } },
    "bad_audio_format",
    4003,
  );
  check(
    { audio: { ...base.audio, output: { encodings: ["opus"] } } },
    "bad_audio_format",
    4003,
  );
  for (const rate of [8000, 11025, 44100, 48000]) {
    assert.ok(
      validateSessionStart({ ...base, audio: { input: { ...base.audio.input, sample_rate: rate } } }).ok,
    );
  }
});

Deno.test("playout: frames are paced with a lead, and stop is immediate", async () => {
  let now = 0;
  const sent: number[] = [];
  const frames = Array.from({ length: 20 }, (_, i) => new Uint8Array([i]));
  const sender = new PacedSender({
    frames,
    frameMs: 20,
    leadMs: 100,
    send: (f) => sent.push(f[0]),
    now: () => now,
  });
  const done = sender.run();
  assert.deepEqual(sent, [0, 1, 2, 3, 4, 5]); // 100 ms of lead: frames due at <= 0 ms
  now = 40;
  await until(() => sent.length >= 8, "the frames due by 140 ms");
  assert.equal(sent.length, 8);
  sender.stop();
  now = 1000;
  await new Promise((r) => setTimeout(r, 30));
  assert.equal(sent.length, 8);
  assert.equal(await done, "stopped");
  assert.equal(sender.sentFrames, 8);

  const quick = new PacedSender({ frames: frames.slice(0, 3), frameMs: 20, leadMs: 200, send: () => {} });
  assert.equal(await quick.run(), "completed");
});

Deno.test("reflect metadata: installed once, prototype-aware", () => {
  installReflectMetadata();
  installReflectMetadata();
  const R = Reflect as unknown as {
    defineMetadata(k: unknown, v: unknown, t: object, p?: string): void;
    getMetadata(k: unknown, t: object, p?: string): unknown;
    getOwnMetadata(k: unknown, t: object, p?: string): unknown;
    hasMetadata(k: unknown, t: object, p?: string): boolean;
  };
  class Base {}
  class Derived extends Base {}
  R.defineMetadata("k", 1, Base);
  assert.equal(R.getMetadata("k", Derived), 1);
  assert.equal(R.getOwnMetadata("k", Derived), undefined);
  assert.equal(R.hasMetadata("k", Base), true);
  R.defineMetadata("k", 2, Base, "method");
  assert.equal(R.getMetadata("k", Base, "method"), 2);
});
