/**
 * A session's media behaviour over the fake engine: reconnecting, barge-in, the microphone upstream,
 * speech held until someone watches, and chunks_rendered.
 */
import assert from "node:assert/strict";
import { tone } from "../../testing/fake_bridge.ts";
import { DEADLINE_MS } from "../../testing/deadline.ts";
import { MediaClientRecorder, until, withMedia } from "../../testing/media.ts";

/** Decodes the audio of a recorded fMP4 stream to 48 kHz mono PCM16 with ffmpeg. */
async function decodeAudio(binaries: Uint8Array[]): Promise<Int16Array> {
  const dir = await Deno.makeTempDir();
  try {
    const total = binaries.reduce((n, b) => n + b.length, 0);
    const all = new Uint8Array(total);
    let o = 0;
    for (const b of binaries) {
      all.set(b, o);
      o += b.length;
    }
    await Deno.writeFile(`${dir}/s.mp4`, all);
    const out = await new Deno.Command("ffmpeg", {
      args: [
        "-hide_banner",
        "-v",
        "error",
        "-i",
        `${dir}/s.mp4`,
        "-vn",
        "-f",
        "s16le",
        "-ac",
        "1",
        "-ar",
        "48000",
        "-",
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    return new Int16Array(out.stdout.buffer, 0, out.stdout.length >> 1);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Milliseconds of 10 ms windows louder than −30 dBFS. */
function loudMs(pcm: Int16Array): number {
  let loud = 0;
  for (let i = 0; i + 480 <= pcm.length; i += 480) {
    let sum = 0;
    for (let j = i; j < i + 480; j++) sum += pcm[j] * pcm[j];
    if (Math.sqrt(sum / 480) > 1036) loud += 10;
  }
  return loud;
}

Deno.test("media session: barge-in drops the queued speech at once and the stream carries no more of it", async () => {
  await withMedia(async ({ create, wsUrl, fake, media }) => {
    const s = await create();
    const engine = fake.of(s.session_id);
    const c = MediaClientRecorder.withToken(wsUrl(s.session_id), s.client_token);
    await c.until(() => c.segments().length > 0, DEADLINE_MS, "stream");
    // The engine sends 6 s of speech at once (faster than real time): it waits in the playout queue.
    engine.events.onResponseStarted("r_1");
    for (let i = 0; i < 300; i++) engine.events.onAudio(tone(480, 24000, 220, 9000, i * 480), "r_1");
    engine.events.onResponseDone("r_1", "completed");
    const m = media(s.session_id);
    // Barge in once half a second has played (the interrupt follows the check with no tick in between,
    // so however busy the machine, most of the 6 s is still queued).
    await until(
      () => m.stats().audioWritten > 0 && m.stats().queuedSamples < 6 * 48000 - 24000,
      DEADLINE_MS,
      "playout",
    );
    engine.events.onInterrupt("r_1");
    const after = m.stats();
    assert.equal(after.queuedSamples, 0, "nothing of the response is left queued");
    assert.ok(after.interruptDroppedSamples > 48000, `dropped ${after.interruptDroppedSamples}`);
    const played = engine.played.find((p) => p.responseId === "r_1");
    assert.ok(played?.interrupted, "reported to the engine as interrupted");
    assert.ok(played!.playedMs >= 500 && played!.playedMs < 5000, `played ${played!.playedMs} ms`);
    await c.until(
      () => c.texts.some((t) => t.type === "interrupt" && t.response_id === "r_1"),
      DEADLINE_MS,
      "interrupt",
    );
    // Let the stream run on, then check what was actually encoded.
    const videoBefore = c.segments().filter((x) => x.track === 1).length;
    await c.until(
      () => c.segments().filter((x) => x.track === 1).length > videoBefore + 8,
      DEADLINE_MS,
      "video to keep flowing",
    );
    await c.close();
    const loud = loudMs(await decodeAudio(c.binaries));
    // What was encoded is what played before the interrupt (played_ms counts what was written, so the
    // lead written ahead of the clock is part of it), give or take the 10 ms loudness windows.
    assert.ok(loud >= played!.playedMs - 60, `loud ${loud} ms vs played ${played!.playedMs} ms`);
    assert.ok(loud <= played!.playedMs + 40, `loud ${loud} ms vs played ${played!.playedMs} ms`);
    assert.ok(loud < 6000 - 1000, "most of the 6 s response was never encoded");
  });
});

Deno.test("media session: speech waits for a client, then plays whole and is reported played", async () => {
  await withMedia(async ({ create, wsUrl, fake, media }) => {
    const s = await create();
    const engine = fake.of(s.session_id);
    engine.events.onResponseStarted("r_0");
    for (let i = 0; i < 25; i++) engine.events.onAudio(tone(480, 24000, 330, 9000, i * 480), "r_0");
    engine.events.onResponseDone("r_0", "completed");
    // (the streaming resampler holds back the last sample or two until more audio comes)
    const queued = () => media(s.session_id).stats().queuedSamples;
    await until(() => queued() >= 25 * 960 - 4, DEADLINE_MS, "the greeting to be queued");
    // Nobody watches: nothing of it plays meanwhile (a window to see that nothing happens, not a wait).
    await new Promise((r) => setTimeout(r, 300));
    assert.ok(
      queued() >= 25 * 960 - 4 && queued() <= 25 * 960,
      `nobody watches: the greeting waits (${queued()})`,
    );
    assert.equal(engine.played.length, 0);
    const c = MediaClientRecorder.withToken(wsUrl(s.session_id), s.client_token);
    await until(() => engine.played.length > 0, DEADLINE_MS, "played report");
    assert.deepEqual(engine.played[0], { responseId: "r_0", playedMs: 500, interrupted: false });
    // The report comes once the speech is written to the encoder: wait until 300 ms more audio than then
    // has reached the client, so the stream holds all of it.
    const audioReceived = () =>
      c.segments().filter((x) => x.track === 2).reduce(
        (n, x) => n + x.durations.reduce((a, b) => a + b, 0),
        0,
      );
    const atReport = audioReceived();
    await c.until(() => audioReceived() >= atReport + 0.3 * 48000, DEADLINE_MS, "the encoded speech");
    await c.close();
    const loud = loudMs(await decodeAudio(c.binaries));
    assert.ok(Math.abs(loud - 500) <= 40, `loud ${loud} ms`);
  });
});

Deno.test("media session: a reconnect with a fresh token continues the same timeline", async () => {
  await withMedia(async ({ h, key, create, wsUrl }) => {
    const s = await create();
    const a = MediaClientRecorder.withToken(wsUrl(s.session_id), s.client_token);
    await a.until(
      () => a.segments().filter((x) => x.track === 1).length >= 30,
      DEADLINE_MS,
      "first connection",
    );
    await a.close();
    const lastA = Math.max(...a.segments().filter((x) => x.track === 1).map((x) => x.baseTime));
    await new Promise((r) => setTimeout(r, 300));
    const fresh = await h.req("POST", `/v1/sessions/${s.session_id}/client-token`, { key });
    assert.equal(fresh.status, 200);
    assert.notEqual(fresh.body.client_token, s.client_token);
    assert.equal(fresh.body.stream_metadata.media_url, s.stream_metadata.media_url);
    const b = MediaClientRecorder.withToken(wsUrl(s.session_id), fresh.body.client_token);
    await b.until(
      () => b.segments().filter((x) => x.track === 1).length >= 5,
      DEADLINE_MS,
      "second connection",
    );
    assert.equal(b.texts[0].type, "hello");
    assert.equal(new TextDecoder().decode(b.binaries[0].subarray(4, 8)), "ftyp");
    const videoB = b.segments().filter((x) => x.track === 1);
    assert.ok(videoB[0].key, "starts at a keyframe");
    assert.ok(videoB.at(-1)!.baseTime > lastA, "the timeline went on: same session, not a restart");
    assert.ok(lastA - videoB[0].baseTime < 90_000, "joins within one GOP of the live edge");
    const got = await h.req("GET", `/v1/sessions/${s.session_id}`, { key });
    assert.equal(got.body.status, "active");
    await b.close();
  });
});

Deno.test("media session: microphone audio goes to the engine from the newest client; bad frames close 1003", async () => {
  await withMedia(async ({ create, wsUrl, fake }) => {
    const s = await create();
    const engine = fake.of(s.session_id);
    const old = MediaClientRecorder.withToken(wsUrl(s.session_id), s.client_token);
    await old.until(() => old.segments().length > 0, DEADLINE_MS, "old client");
    const c = MediaClientRecorder.withToken(wsUrl(s.session_id), s.client_token);
    await c.until(() => c.segments().length > 0, DEADLINE_MS, "new client");
    const frame = new Uint8Array(tone(480, 24000).buffer); // 20 ms at 24 kHz = 960 bytes
    for (let i = 0; i < 10; i++) c.ws.send(frame);
    old.ws.send(frame); // the older client no longer holds the microphone
    await until(() => engine.userAudio.reduce((n, b) => n + b.length, 0) >= 9600, DEADLINE_MS, "user audio");
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(engine.userAudio.reduce((n, b) => n + b.length, 0), 9600);
    assert.deepEqual(engine.userAudio[0], frame);
    c.ws.send(new Uint8Array(3));
    await c.closed;
    assert.equal(c.closeCode, 1003);
    assert.equal(c.closeReason, "invalid_audio_frame");
    await old.close();
  });
});

Deno.test("media session: chunks_rendered counts the frames rendered and encoded", async () => {
  await withMedia(async ({ h, key, create, wsUrl }) => {
    const s = await create();
    const c = MediaClientRecorder.withToken(wsUrl(s.session_id), s.client_token);
    await c.until(
      () => c.segments().filter((x) => x.track === 1).length >= 25,
      DEADLINE_MS,
      "a second of video",
    );
    const end = await h.req("POST", `/v1/sessions/${s.session_id}/end`, { key });
    assert.equal(end.status, 200);
    assert.equal(end.body.status, "ended");
    await c.closed;
    assert.equal(c.closeCode, 1000);
    assert.equal(c.closeReason, "session_ended");
    assert.ok(c.texts.some((t) => t.type === "ended"));
    const video = c.segments().filter((x) => x.track === 1);
    const lastIndex = Math.max(...video.map((v) => v.baseTime / 3600));
    const rendered = end.body.chunks_rendered;
    assert.ok(rendered >= video.length, `${rendered} rendered, ${video.length} received`);
    assert.ok(rendered <= lastIndex + 1 + 2, `${rendered} rendered, last frame index ${lastIndex}`);
    // at most one per 40 ms of the session's life (media starts just before the session is active); fewer
    // when a busy machine made the renderer drop frames
    assert.ok(rendered <= end.body.duration_s * 25 + 12, `${rendered} vs ${end.body.duration_s} s`);
  });
});
