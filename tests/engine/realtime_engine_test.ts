/**
 * The strictly real-time test engine (`testing/realtime_engine.ts`) the player benches measure a customer's
 * streaming engine with: its pacing is the point of it, so it is checked here — no chunk leaves before it has
 * been spoken, `response.started` never precedes the first chunk's send by more than a send, and the audio
 * arrives whole and in order.
 */
import assert from "node:assert/strict";
import { startRealtimeEngine } from "../../testing/realtime_engine.ts";
import { TestClient, testTls, tone } from "./_helpers.ts";

Deno.test("realtime engine: each chunk leaves once spoken, announced with its first chunk, whole and in order", async () => {
  const tls = await testTls();
  const engine = startRealtimeEngine({ tls, sampleRate: 24000 });
  const client = TestClient.connect(engine.url, { caPem: tls.caPem });
  try {
    assert(await client.opened, "the client connected");
    client.start(16000, { session_id: "s_rt" });
    await client.next("session.ready");
    // 110 ms: five whole chunks and a partial one (padded), two turns.
    const pcm = tone(110, 24000);
    const before = performance.timeOrigin + performance.now();
    await engine.talk("s_rt", { pcm, bursts: 2, gapMs: 100 });
    await client.next("response.done");
    await client.next("response.done");
    const session = engine.sessions.get("s_rt")!;
    // Turn b starts speaking at t0_b = (talk called) + 20 + b·(6·20 + 100) ms at the earliest; its chunk i
    // exists at t0_b + (i + 1)·20 ms and must not leave sooner (timers may only fire late).
    for (const [b, id] of ["r_0", "r_1"].entries()) {
      const chunks = session.sent.filter((c) => c.responseId === id);
      assert.deepEqual(chunks.map((c) => c.index), [0, 1, 2, 3, 4, 5]);
      const t0 = before + 20 + b * (6 * 20 + 100);
      for (const c of chunks) {
        assert(c.sentAt >= t0 + (c.index + 1) * 20 - 1, `${id} chunk ${c.index} left before it was spoken`);
      }
      const announced = session.announcedAt.get(id)!;
      assert(announced >= t0 + 20 - 1, `${id} announced before its first chunk was spoken`);
      assert(announced <= chunks[0].sentAt, `${id} announced after its first chunk`);
    }
    // What the client got: started, 6 binary chunks of 480 samples, done — twice, the audio whole.
    const kinds = client.received.map((r) => r.kind === "json" ? String(r.message.type) : "bin");
    const turn = ["response.started", ...Array(6).fill("bin"), "response.done"];
    assert.deepEqual(kinds.slice(1), [...turn, ...turn]);
    const bytes = client.received.flatMap((r) => r.kind === "binary" ? [r.bytes] : []);
    for (const b of bytes) assert.deepEqual(b.byteLength, 960);
    const got = new Int16Array(new Uint8Array(bytes.slice(0, 6).flatMap((b) => [...b])).buffer);
    assert.deepEqual([...got.subarray(0, pcm.length)], [...pcm]);
    assert.deepEqual([...got.subarray(pcm.length)].every((x) => x === 0), true);
  } finally {
    await client.dispose();
    await engine.close();
  }
});
