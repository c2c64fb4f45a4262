/**
 * Video encoders started ahead (`src/media/encoder_spares.ts`): the first take spawns its own; a spare is
 * started after it and handed out by the next take, which gets its own output (a real ffmpeg encoding a
 * real frame), as soon as the taken one has given its first output (or after the refill delay when it gives
 * none); a dead spare is never handed out; `close` stops the spares. And a media plane's sessions
 * take them: the second video client of a plane finds its encoder started.
 */
import assert from "node:assert/strict";
import { EncoderSpares } from "../../src/media/encoder_spares.ts";
import { videoEncoderArgs } from "../../src/media/ffmpeg.ts";
import { FlvDemuxer } from "../../src/media/flv.ts";
import { MediaClientRecorder, withMedia } from "../../testing/media.ts";

const FORMAT = { width: 64, height: 64, fps: 25 };
const ARGS = videoEncoderArgs(FORMAT, 28);

async function until(predicate: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Encodes one grey frame with `take`'s encoder; resolves with the access units it gave. */
async function encodeOne(spares: EncoderSpares): Promise<number> {
  let units = 0;
  const flv = new FlvDemuxer({ onConfig: () => {}, onAccessUnit: () => units++ });
  const enc = spares.take((c) => flv.push(c));
  enc.write(new Uint8Array(FORMAT.width * FORMAT.height * 3 / 2).fill(128));
  await until(() => units > 0, "an encoded frame");
  await enc.stop(2000);
  return units;
}

Deno.test("encoder spares: a spare is started after a take, handed to the next one, and stopped by close", async () => {
  const spares = new EncoderSpares("ffmpeg", ARGS, 1);
  try {
    assert.ok(await encodeOne(spares) > 0);
    assert.deepEqual([spares.coldTakes, spares.warmTakes], [1, 0], "no spare before the first take");
    await until(() => spares.ready === 1, "a spare");
    assert.ok(await encodeOne(spares) > 0, "the spare encodes for its taker");
    assert.deepEqual([spares.coldTakes, spares.warmTakes], [1, 1]);
    await until(() => spares.ready === 1, "the next spare");
  } finally {
    await spares.close();
  }
  assert.equal(spares.ready, 0, "close stops the spares");
});

Deno.test("encoder spares: the replacement is spawned once the taken encoder's first frame is out, not after the fallback delay", async () => {
  // A fallback far past the test's deadline: only the first output can start the replacement in time.
  const spares = new EncoderSpares("ffmpeg", ARGS, 1, 10 * 60_000);
  try {
    assert.ok(await encodeOne(spares) > 0);
    await until(() => spares.ready === 1, "a spare started after the first output");
    assert.ok(await encodeOne(spares) > 0);
    assert.deepEqual([spares.coldTakes, spares.warmTakes], [1, 1]);
    await until(() => spares.ready === 1, "the next spare");
  } finally {
    await spares.close();
  }
  // A taken encoder that gives nothing (it is never written to): the replacement comes after the delay.
  const quiet = new EncoderSpares("ffmpeg", ARGS, 1, 300);
  try {
    const idle = quiet.take(() => {});
    await until(() => quiet.ready === 1, "a spare after the fallback delay");
    await idle.stop(0);
  } finally {
    await quiet.close();
  }
});

Deno.test("encoder spares: none kept with size 0; a dead spare is not handed out", async () => {
  const none = new EncoderSpares("ffmpeg", ARGS, 0);
  try {
    await encodeOne(none);
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(none.ready, 0);
  } finally {
    await none.close();
  }
  // A spare whose process cannot run (a missing executable is caught at spawn; a process that exits at once
  // is the case here: ffmpeg refusing its arguments).
  const broken = new EncoderSpares("ffmpeg", ["-hide_banner", "-loglevel", "quiet", "-no_such_option"], 1);
  try {
    const first = broken.take(() => {});
    await first.exited;
    // Its replacement exits too: the next take spawns its own rather than hand out the dead one.
    await new Promise((r) => setTimeout(r, 1500));
    const second = broken.take(() => {});
    await second.exited;
    assert.equal(broken.warmTakes, 0, "a dead spare is never handed out");
  } finally {
    await broken.close();
  }
});

Deno.test("encoder spares: a plane's video clients, and a reconnect after the encoder retired, find their encoder started", async () => {
  await withMedia(async ({ create, wsUrl, plane, encoders }) => {
    const spares = plane.encoderSpares!;
    assert.ok(spares, "the plane keeps a spare (SVC_RENDER_ENCODER_SPARES=1, the service's default)");
    for (let i = 0; i < 2; i++) {
      const s = await create();
      // A spare is started after the first encoder of the plane (the first session's start checks one).
      await until(() => spares.ready === 1, "a spare");
      const client = MediaClientRecorder.withToken(wsUrl(s.session_id), s.client_token);
      await client.until(() => client.segments().some((x) => x.track === 1 && x.key), 30_000, "a key frame");
      await client.close();
    }
    assert.ok(
      spares.warmTakes >= 2,
      `each video client's encoder was a spare (warm takes ${spares.warmTakes})`,
    );
    // A reconnect after the last video client left (its encoder retired): a spare again, started before it.
    const s = await create();
    const first = MediaClientRecorder.withToken(wsUrl(s.session_id), s.client_token);
    await first.until(() => first.segments().some((x) => x.track === 1 && x.key), 30_000, "a key frame");
    await first.close();
    await until(() => spares.ready === 1, "a spare");
    const warm = spares.warmTakes, cold = spares.coldTakes, started = encoders.length;
    const again = MediaClientRecorder.withToken(wsUrl(s.session_id), s.client_token);
    await again.until(() => again.segments().some((x) => x.track === 1 && x.key), 30_000, "a key frame");
    await again.close();
    assert.deepEqual(
      [spares.warmTakes - warm, spares.coldTakes - cold],
      [1, 0],
      "the reconnect took a spare",
    );
    assert.equal(encoders.length, started + 1, "one encoder for the reconnect");
  }, { media: { encoderSpares: 1 } });
});
