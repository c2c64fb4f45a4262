import assert from "node:assert/strict";
import { EspeakTts, type ReferenceEngineOptions, startReferenceEngine } from "../../engine/mod.ts";
import { answerText, toolSentence } from "../../engine/conversation.ts";
import { resampleLinear, rms } from "../../src/speech/pcm.ts";
import {
  FakeTts,
  join,
  type Received,
  silence,
  sleep,
  testTls,
  TOKEN,
  tone,
  withEngine,
} from "./_helpers.ts";

const OUT = 24000;
const FRAME_BYTES = OUT * 2 * 20 / 1000; // 20 ms at 24 kHz

async function engineWith(options: Partial<ReferenceEngineOptions> = {}) {
  const tls = await testTls();
  return () =>
    startReferenceEngine({ tls, authToken: TOKEN, greeting: null, tts: new FakeTts(200), ...options });
}

function binariesBetween(received: Received[], from: number, to = received.length): Uint8Array[] {
  return received.slice(from, to).flatMap((r) => r.kind === "binary" ? [r.bytes] : []);
}

function indexOfMessage(received: Received[], type: string, after = 0): number {
  return received.findIndex((r, i) => i >= after && r.kind === "json" && r.message.type === type);
}

Deno.test("conversation: the greeting arrives as response.started, paced 20 ms frames, transcript, response.done", async () => {
  const tts = new FakeTts(600);
  await withEngine(await engineWith({ greeting: "Welcome!", tts }), async (engine, connect) => {
    const client = await connect();
    client.start(16000);
    await client.next("session.ready");
    const started = await client.waitFor((r) => r.kind === "json" && r.message.type === "response.started");
    assert.deepEqual((started.frame as { message: unknown }).message, {
      type: "response.started",
      response_id: "r_0",
    });
    const transcript = await client.next("transcript");
    assert.deepEqual(transcript, {
      type: "transcript",
      role: "agent",
      turn_id: "r_0",
      text: "Welcome!",
      final: true,
    });
    const done = await client.waitFor((r) => r.kind === "json" && r.message.type === "response.done");
    assert.deepEqual((done.frame as { message: unknown }).message, {
      type: "response.done",
      response_id: "r_0",
      status: "completed",
    });
    const frames = binariesBetween(client.received, started.index, done.index);
    assert.equal(frames.length, 30);
    assert.ok(frames.every((f) => f.byteLength === FRAME_BYTES));
    // paced in real time (with at most ~200 ms lead), not sent at once: unpaced, 30 frames arrive within a
    // few ms; paced, 600 ms of audio take about 400 ms. The bound leaves room for a loaded machine, where the
    // client may read a delayed burst late.
    const elapsed = done.frame.at - started.frame.at;
    assert.ok(elapsed >= 150, `greeting took ${elapsed} ms: not paced`);
    assert.deepEqual(tts.calls, [{ text: "Welcome!", sampleRate: OUT }]);
    const s = engine.stats().sessions[0];
    assert.equal(s.responses_started, 1);
    assert.equal(s.responses_completed, 1);
    assert.equal(s.audio_bytes_sent, 30 * FRAME_BYTES);

    client.send({ type: "response.played", response_id: "r_0", played_ms: 600, interrupted: false });
    client.send({ type: "ping", id: 9 });
    await client.next("pong");
    assert.equal(engine.stats().sessions[0].responses_played, 1);
    assert.equal(engine.stats().sessions[0].played_ms, 600);
  });
});

Deno.test("conversation: a user turn gets a spoken answer followed by the user's own words", async () => {
  const tts = new FakeTts(200);
  await withEngine(await engineWith({ tts }), async (engine, connect) => {
    const client = await connect();
    client.start(16000);
    await client.next("session.ready");
    const speech = tone(400, 16000, 8000, 200);
    const sent = client.sendAudio(join(silence(100, 16000), speech, silence(700, 16000)), 16000);
    await client.next("input.speech_started");
    const started = await client.waitFor((r) => r.kind === "json" && r.message.type === "response.started");
    const transcript = await client.next("transcript");
    assert.equal(transcript.text, answerText(400));
    assert.equal(transcript.text, "I heard you speak for 0.4 seconds. Here is what you said.");
    const done = await client.waitFor((r) => r.kind === "json" && r.message.type === "response.done");
    assert.equal((done.frame as { message: Record<string, unknown> }).message.status, "completed");
    const bytes = binariesBetween(client.received, started.index, done.index).reduce(
      (n, f) => n + f.byteLength,
      0,
    );
    // answer (200 ms) + gap (300 ms) + playback (100 ms pre-roll + 400 ms speech + 200 ms tail) at 24 kHz
    assert.equal(bytes, (200 + 300 + 700) * OUT / 1000 * 2);
    assert.equal(tts.calls.at(-1)?.text, answerText(400));
    const s = engine.stats().sessions[0];
    assert.equal(s.user_audio_bytes, sent);
    assert.equal(s.user_turns, 1);
    assert.equal(s.user_speech_ms, 400);
    assert.equal(s.responses_completed, 1);
  });
});

Deno.test("conversation: with a demo tool, the answer first calls the client's tool (tool_call) and says what its tool_result was", async () => {
  const tts = new FakeTts(200);
  await withEngine(await engineWith({ tts, demoTool: "get_local_time" }), async (_engine, connect) => {
    const client = await connect();
    client.start(16000);
    await client.next("session.ready");
    client.sendAudio(join(silence(100, 16000), tone(400, 16000, 8000, 200), silence(700, 16000)), 16000);
    const call = await client.next("tool_call");
    assert.deepEqual(call, {
      type: "tool_call",
      call_id: "call_1",
      name: "get_local_time",
      arguments: { turn_id: "u_1", speech_ms: 400 },
    });
    await sleep(100);
    assert.equal(
      client.received.filter((r) => r.kind === "json" && r.message.type === "response.started").length,
      0,
      "the answer waits for the tool",
    );
    client.send({ type: "tool_result", call_id: "call_9", output: "ignored" }); // not this engine's call
    client.send({ type: "tool_result", call_id: "call_1", output: { time: "10:42" } });
    const transcript = await client.next("transcript");
    assert.equal(
      transcript.text,
      `${answerText(400)} ${toolSentence("get_local_time", { output: { time: "10:42" }, isError: false })}`,
    );
    assert.equal(
      transcript.text,
      'I heard you speak for 0.4 seconds. Here is what you said. Your get_local_time tool answered: {"time":"10:42"}.',
    );
    assert.equal(tts.calls.at(-1)?.text, transcript.text);
    // a failed tool is said so
    client.sendAudio(join(silence(100, 16000), tone(400, 16000, 8000, 200), silence(700, 16000)), 16000);
    const second = await client.next("tool_call");
    client.send({
      type: "tool_result",
      call_id: second.call_id,
      output: "No client answered.",
      is_error: true,
    });
    await client.waitFor((r) =>
      r.kind === "json" && r.message.type === "transcript" && String(r.message.text).includes("failed")
    );
  });
});

Deno.test("conversation: echo mode plays the user's words back, resampled", async () => {
  await withEngine(await engineWith({ mode: "echo" }), async (_engine, connect) => {
    const client = await connect();
    client.start(8000);
    await client.next("session.ready");
    const speech = tone(300, 8000, 9000, 300);
    client.sendAudio(join(speech, silence(700, 8000)), 8000);
    const started = await client.waitFor((r) => r.kind === "json" && r.message.type === "response.started");
    const done = await client.waitFor((r) => r.kind === "json" && r.message.type === "response.done");
    const frames = binariesBetween(client.received, started.index, done.index);
    const audio = new Int16Array(join(...frames.map((f) => new Int16Array(f.slice().buffer))));
    // 300 ms speech + 200 ms tail, no pre-roll (speech started at 0), at 24 kHz
    const expected = resampleLinear(join(speech, silence(200, 8000)), 8000, OUT);
    assert.deepEqual(audio, expected);
    assert.ok(!client.messages().some((m) => m.type === "transcript"), "echo has no text");
  });
});

Deno.test("conversation: barge-in interrupts the response and no audio of it follows", async () => {
  await withEngine(
    await engineWith({ greeting: "A long greeting.", tts: new FakeTts(5000) }),
    async (engine, connect) => {
      const client = await connect();
      client.start(16000);
      await client.next("session.ready");
      await client.next("response.started");
      await client.waitFor((r) => r.kind === "binary");
      await sleep(300);
      client.sendAudio(tone(200, 16000), 16000);
      await client.next("input.speech_started");
      const interrupt = await client.waitFor((r) =>
        r.kind === "json" && r.message.type === "input.interrupt"
      );
      assert.deepEqual((interrupt.frame as { message: unknown }).message, {
        type: "input.interrupt",
        response_id: "r_0",
      });
      const done = await client.waitFor((r) => r.kind === "json" && r.message.type === "response.done");
      assert.deepEqual((done.frame as { message: unknown }).message, {
        type: "response.done",
        response_id: "r_0",
        status: "interrupted",
      });
      assert.equal(done.index, interrupt.index + 1, "response.done follows input.interrupt directly");
      await sleep(300);
      assert.equal(
        binariesBetween(client.received, interrupt.index).length,
        0,
        "no audio after input.interrupt",
      );
      const speechStarted = indexOfMessage(client.received, "input.speech_started");
      assert.ok(speechStarted < interrupt.index);
      assert.ok(!client.messages().some((m) => m.type === "transcript"));
      const s = engine.stats().sessions[0];
      assert.equal(s.interrupts, 1);
      assert.equal(s.responses_completed, 0);
      // not all of the 5 s of audio were sent (it is paced in real time: how much was sent depends on how
      // busy the machine was before the interrupt, hence the loose bound)
      assert.ok(s.audio_bytes_sent < 4 * OUT * 2, `sent ${s.audio_bytes_sent} bytes`);
      client.send({ type: "response.played", response_id: "r_0", played_ms: 380, interrupted: true });

      // the user's turn is then answered as usual
      client.sendAudio(silence(700, 16000), 16000);
      const next = await client.next("response.started");
      assert.equal(next.response_id, "r_1");
    },
  );
});

Deno.test("conversation: response.cancel stops the response's audio", async () => {
  await withEngine(
    await engineWith({ greeting: "Hello.", tts: new FakeTts(3000) }),
    async (engine, connect) => {
      const client = await connect();
      client.start(16000);
      await client.next("session.ready");
      await client.next("response.started");
      await client.waitFor((r) => r.kind === "binary");
      client.send({
        type: "response.cancel",
        response_id: "r_7",
        played_ms: 0,
        reason: "unknown id is ignored",
      });
      client.send({ type: "response.cancel", response_id: "r_0", played_ms: 100, reason: "avatar_stopped" });
      const done = await client.waitFor((r) => r.kind === "json" && r.message.type === "response.done");
      assert.equal((done.frame as { message: Record<string, unknown> }).message.status, "cancelled");
      await sleep(250);
      assert.equal(binariesBetween(client.received, done.index).length, 0);
      assert.ok(!client.messages().some((m) => m.type === "input.interrupt"));
      assert.equal(engine.stats().sessions[0].interrupts, 0);
    },
  );
});

Deno.test("conversation: speech during synthesis drops the pending answer unheard", async () => {
  const tts = new FakeTts(200, 300);
  await withEngine(await engineWith({ tts }), async (_engine, connect) => {
    const client = await connect();
    client.start(16000);
    await client.next("session.ready");
    // a turn whose answer takes 300 ms to synthesise, then the user speaks again right away
    client.sendAudio(
      join(tone(300, 16000), silence(620, 16000), tone(300, 16000), silence(700, 16000)),
      16000,
    );
    const started = await client.next("response.started");
    assert.equal(started.response_id, "r_1", "r_0 was abandoned before it started");
    await client.next("response.done");
    assert.equal(client.messages().filter((m) => m.type === "input.speech_started").length, 2);
  });
});

Deno.test("conversation: a synthesis failure is a non-fatal engine_failure error", async () => {
  const failing = { synthesize: () => Promise.reject(new Error("boom")) };
  await withEngine(await engineWith({ greeting: "Hi", tts: failing }), async (_engine, connect) => {
    const client = await connect();
    client.start(16000);
    await client.next("session.ready");
    const error = await client.next("error");
    assert.equal(error.code, "engine_failure");
    assert.equal(error.fatal, false);
    client.send({ type: "ping", id: 1 });
    await client.next("pong");
    assert.ok(!client.messages().some((m) => m.type === "response.started"));
  });
});

Deno.test("conversation: real espeak-ng greeting and answer", async () => {
  const tts = new EspeakTts();
  const speech = await tts.synthesize("One two three.", 24000);
  await withEngine(await engineWith({ greeting: "Hi.", tts: undefined }), async (engine, connect) => {
    const client = await connect();
    client.start(24000);
    await client.next("session.ready");
    const started = await client.waitFor((r) => r.kind === "json" && r.message.type === "response.started");
    const done = await client.waitFor((r) => r.kind === "json" && r.message.type === "response.done");
    const greeting = binariesBetween(client.received, started.index, done.index);
    const samples = join(...greeting.map((f) => new Int16Array(f.slice().buffer)));
    assert.ok(
      samples.length > OUT * 0.2 && samples.length < OUT * 2,
      `greeting of ${samples.length} samples`,
    );
    assert.ok(rms(samples) > 300, "the greeting is audible");

    client.sendAudio(join(speech, silence(700, 24000)), 24000);
    await client.next("input.speech_started");
    const answer = await client.next("response.started");
    assert.equal(answer.response_id, "r_1");
    await client.waitFor((r) => r.kind === "binary");
    const s = engine.stats().sessions[0];
    assert.equal(s.user_turns, 1);
    assert.ok(s.user_speech_ms > 500 && s.user_speech_ms < 2500, `speech ${s.user_speech_ms} ms`);
    client.send({ type: "session.end", reason: "test" });
    assert.equal((await client.waitClosed()).code, 1000);
  });
});
