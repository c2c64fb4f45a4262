/**
 * Frame buffers: the renderer composes a talking frame into the caller's buffer (`FrameRequest.into`)
 * instead of allocating one per frame, and a video pipeline recycles a few such buffers, handing one back
 * only once the encoder has been given all of it.
 */
import assert from "node:assert/strict";
import { STAMP_BITS, STAMP_ROWS, stampFrame } from "../../bench/stamp.ts";
import { VISEMES } from "../../src/media/lipsync/visemes.ts";
import type { FaceState } from "../../src/media/motion.ts";
import type { FrameRequest, VideoFormat } from "../../src/media/renderer.ts";
import { ENCODER_PIPE_BYTES, EncoderProcess, pipeSizer } from "../../src/media/ffmpeg.ts";
import { FRAME_BUFFERS } from "../../src/media/session/video_pipeline.ts";
import { DEADLINE_MS } from "../../testing/deadline.ts";
import {
  decodeVideo,
  MediaClientRecorder,
  readSegment,
  smallRenderer,
  smallRendererAround,
  withMedia,
} from "../../testing/media.ts";

function face(viseme: (typeof VISEMES)[number]): FaceState {
  const visemes = new Float32Array(VISEMES.length);
  visemes[VISEMES.indexOf(viseme)] = 1;
  return { visemes, eyes: "open", look: "neutral", headDx: 0, headDy: 0, mode: "speaking" };
}

function request(f: FaceState, into?: Uint8Array): FrameRequest {
  return {
    index: 0,
    timeMs: 0,
    audio: new Int16Array(1920),
    sampleRate: 48000,
    speaking: true,
    face: f,
    into,
  };
}

Deno.test("frame buffers: a talking frame is composed in the caller's buffer; a cached frame at rest leaves it alone", async () => {
  const renderer = await smallRenderer();
  const session = renderer.open({ avatarId: "ada", bgId: "studio", seed: 1 });
  const { width, height } = renderer.format;
  const size = width * height * 3 / 2;

  const open = session.renderFrame(request(face("aa"))) as Uint8Array;
  const into = new Uint8Array(size).fill(7);
  const inMine = session.renderFrame(request(face("aa"), into));
  assert.equal(inMine, into, "the open mouth's frame is the caller's buffer");
  assert.deepEqual(inMine, open, "and the same picture as one the renderer allocated");
  // Written again with another mouth: the buffer holds the new frame, not a mix.
  const closed = session.renderFrame(request(face("PP"))) as Uint8Array;
  assert.equal(session.renderFrame(request(face("PP"), into)), into);
  assert.deepEqual(into, closed);
  assert.notDeepEqual(open, closed);

  const untouched = new Uint8Array(size).fill(7);
  const rest = session.renderFrame(request(face("sil"), untouched));
  assert.notEqual(rest, untouched, "a face at rest is the shared cached frame");
  assert.ok(untouched.every((b) => b === 7), "the caller's buffer was not written");
  // A buffer of another size is not used.
  const wrong = new Uint8Array(size - 2);
  assert.notEqual(session.renderFrame(request(face("aa"), wrong)), wrong);
  session.close();
});

/** The barcode stamped in a decoded frame's top rows (block means against mid-grey). */
function readStamp(frame: Uint8Array, format: VideoFormat): number {
  const block = format.width / STAMP_BITS;
  let v = 0;
  for (let b = 0; b < STAMP_BITS; b++) {
    let sum = 0, n = 0;
    for (let y = 4; y < STAMP_ROWS - 4; y++) {
      for (let x = b * block + 2; x < (b + 1) * block - 2; x++) sum += frame[y * format.width + x], n++;
    }
    v = (v * 2) + (sum / n > 126 ? 1 : 0);
  }
  return v >>> 0;
}

Deno.test("frame buffers: a session's frames are built in a few recycled buffers, each whole when encoded", async () => {
  const given = new Set<Uint8Array>();
  /** The stamps rendered (a busy machine's clock skips frames: the indices are not all there). */
  const rendered = new Set<number>();
  let requests = 0, withBuffer = 0;
  // Every frame is built in the pipeline's buffer when it gives one (as a talking face is), its index
  // stamped: a buffer handed back before the encoder had all of it would show another frame's stamp.
  const renderer = await smallRendererAround((req, render, format) => {
    requests++;
    if (req.into) given.add(req.into), withBuffer++;
    const frame = render({ ...req, into: undefined }) as Uint8Array;
    rendered.add(req.index + 1000);
    return stampFrame(frame, format, req.index + 1000, req.into);
  });
  await withMedia(async ({ create, wsUrl }) => {
    const s = await create();
    const client = MediaClientRecorder.withToken(wsUrl(s.session_id), s.client_token);
    try {
      await client.until(
        () => client.segments().filter((x) => x.track === 1).length >= 60,
        DEADLINE_MS,
        "60 video segments",
      );
    } finally {
      await client.close();
    }
    const init = client.binaries.find((b) => readSegment(b) === null);
    assert.ok(init, "an init segment");
    const segments = client.binaries.filter((b) => readSegment(b) !== null);
    const frames = await decodeVideo([init, ...segments], renderer.format.width, renderer.format.height);
    assert.ok(frames.length >= 60, `decoded ${frames.length} frames`);
    const stamps = frames.map((f) => readStamp(f, renderer.format));
    for (let i = 1; i < stamps.length; i++) {
      assert.ok(stamps[i] > stamps[i - 1], `frame ${i}: stamp ${stamps[i]} after ${stamps[i - 1]}`);
    }
    const strays = stamps.filter((v) => !rendered.has(v));
    assert.deepEqual(strays, [], `stamps of no frame rendered (of ${stamps.slice(0, 5)}…)`);
  }, { plane: { renderer } });
  assert.ok(requests >= 60, `${requests} frames rendered`);
  assert.ok(given.size <= FRAME_BUFFERS, `${given.size} buffers for ${requests} frames`);
  // Buffers come back: nearly every frame gets one (none only while all are waiting for the encoder).
  assert.ok(withBuffer >= requests - FRAME_BUFFERS, `${withBuffer} of ${requests} frames had a buffer`);
});

/**
 * Runs `fn` with an encoder process that reads nothing from its stdin until `go()`, then reads it all; the
 * process and its directory are gone afterwards.
 */
async function withIdleReader(
  fn: (enc: EncoderProcess, go: () => Promise<void>) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir();
  const flag = `${dir}/go`;
  const enc = EncoderProcess.spawn("sh", [
    "-c",
    `while [ ! -e '${flag}' ]; do sleep 0.02; done; cat >/dev/null`,
  ], null);
  try {
    await fn(enc, () => Deno.writeTextFile(flag, ""));
    await enc.closeInput();
    assert.equal((await enc.exited).code, 0);
  } finally {
    enc.kill();
    await enc.exited;
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("frame buffers: an encoder's write says done only once the process has read all of it", async () => {
  // The pipe holds at most ENCODER_PIPE_BYTES of the 3 MB written, so the write cannot be done before the
  // process reads.
  await withIdleReader(async (enc, go) => {
    let done = false;
    const written = new Promise<void>((resolve) =>
      enc.write(new Uint8Array(3 * ENCODER_PIPE_BYTES).fill(65), resolve)
    );
    void written.then(() => done = true);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(done, false, "done before the process read the bytes");
    assert.equal(enc.pendingWrites, 1);
    await go();
    await written;
    assert.equal(enc.pendingWrites, 0);
  });
});

Deno.test("frame buffers: an encoder's stdin takes a whole 512×512 frame before the encoder reads any of it", async () => {
  // With the default 64 KB pipe a frame goes in six writes, each waiting for the encoder to read and for a
  // later turn of the event loop (held back by a busy loop: frames reached the encoder 40-70 ms late).
  await withIdleReader(async (enc, go) => {
    const frame = new Uint8Array(512 * 512 * 3 / 2);
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await Promise.race([
        new Promise<void>((resolve) => enc.write(frame, resolve)),
        new Promise((_, reject) => {
          timer = setTimeout(
            () => reject(new Error("a frame did not fit in the encoder's pipe (is perl installed?)")),
            DEADLINE_MS,
          );
        }),
      ]);
    } finally {
      clearTimeout(timer);
      await go();
    }
    assert.equal(enc.pendingWrites, 0);
  });
});

Deno.test("frame buffers: without perl an encoder starts with the default pipe", async () => {
  const saved = { ...pipeSizer };
  pipeSizer.program = "no-such-perl-here";
  try {
    const enc = EncoderProcess.spawn("sh", ["-c", "cat >/dev/null"], null);
    assert.equal(pipeSizer.available, false, "the missing perl is remembered");
    await new Promise<void>((resolve) => enc.write(new Uint8Array(200_000), resolve));
    await enc.closeInput();
    assert.equal((await enc.exited).code, 0);
  } finally {
    Object.assign(pipeSizer, saved);
  }
});
