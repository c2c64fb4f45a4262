/**
 * The vendor2 bridge against its protocol-faithful fake (testing/fakes/vendor2.ts), through the real HTTP
 * API: an active session, the access token in the `access_token` query parameter only and the agent id as a
 * path segment, the announced audio format adopted (PCM 24 kHz, 44.1 kHz, µ-law 8 kHz), agent audio → fMP4
 * fragments with sound, microphone PCM → `audio_input` at the vendor's rate, silence while nobody talks (the
 * fake closes idle sockets), barge-in (`audio_output_clear`) → flush, transcripts, hang-up → engine_ended,
 * agent failure → engine_failed, and every start failure mapped.
 */
import assert from "node:assert/strict";
import { startVendor2Fake, type Vendor2Behavior } from "../../testing/fakes/vendor2.ts";
import { rms, toneHz, until } from "../../testing/fakes/server.ts";
import { checkErrorBody } from "../../testing/fixtures.ts";
import { MediaClientRecorder } from "../../testing/media.ts";
import {
  concat,
  decodeStreamAudio,
  loudMs,
  midReply,
  streamSpeech,
  testTls,
  toneChunks,
  toneSpan,
  withVendors,
} from "./_helpers.ts";

const TOKEN = `eyJtoken${crypto.randomUUID().replaceAll("-", "")}`;
const AGENT = "agent_Fo7pKNBUwLZxrTd6jvhpaE";
const body = (token = TOKEN, agent = AGENT) => ({
  provider_type: "vendor2",
  provider_config: { vendor2: { access_token: token, agent_id: agent } },
});

// deno-lint-ignore no-explicit-any
async function waitEnd(get: (sid: string) => Promise<any>, sid: string, status: string, reason: string) {
  const deadline = Date.now() + 20_000;
  let got = await get(sid);
  while (got.status === "active" && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
    got = await get(sid);
  }
  assert.equal(got.status, status);
  assert.equal(got.end_reason, reason);
}

Deno.test("vendor2: active through the API; the token is the access_token query parameter and nowhere else; session_create asks pcm_24000", async () => {
  const fake = startVendor2Fake(testTls, { token: TOKEN, agents: [AGENT] });
  try {
    await withVendors({ SVC_VENDOR2_URL: fake.url }, async ({ h, create, key, get }) => {
      const res = await create(body());
      assert.equal(res.status, 200, res.text);
      const seen = fake.server.requests[0];
      assert.equal(seen.url.pathname, `/v1/agents/websocket/${AGENT}`);
      assert.equal(seen.url.searchParams.get("access_token"), TOKEN);
      assert.equal(seen.url.searchParams.get("cartesia_version"), "2026-08-14");
      for (const [name, value] of seen.headers) assert.ok(!value.includes(TOKEN), `not in ${name}`);
      assert.deepEqual(fake.call().ws.received[0], {
        type: "session_create",
        audio: { input_format: "pcm_24000" },
      });
      assert.ok(!res.text.includes(TOKEN) && !h.logs.join("\n").includes(TOKEN), "no echo, no log");
      assert.ok(!h.logs.join("\n").includes("access_token"), "no vendor URL query in the logs");
      assert.equal((await h.req("POST", `/v1/sessions/${res.body.session_id}/end`, { key })).status, 200);
      assert.equal((await fake.call().ws.closed).code, 1000);
      assert.equal((await get(res.body.session_id)).status, "ended");
    });
  } finally {
    await fake.close();
  }
});

for (const format of ["pcm_24000", "pcm_44100", "mulaw_8000"]) {
  Deno.test(`vendor2 (${format}): agent audio plays with sound, transcripts reach the client, the microphone reaches the vendor at its rate`, async () => {
    const fake = startVendor2Fake(testTls, { token: TOKEN, agents: [AGENT], format });
    try {
      await withVendors({ SVC_VENDOR2_URL: fake.url }, async ({ create, wsUrl }) => {
        const res = await create(body());
        assert.equal(res.status, 200, res.text);
        const c = MediaClientRecorder.withToken(wsUrl(res.body.session_id), res.body.client_token);
        await c.until(() => c.segments().length > 0, 20_000, "stream");
        const call = fake.call();
        const turn = call.speak(toneChunks(50, 20, call.rate, 300), "Hello there");
        await c.until(
          () => c.texts.some((t) => t.type === "transcript" && t.role === "agent" && t.final),
          20_000,
          "agent transcript",
        );
        const agent = c.texts.filter((t) => t.type === "transcript" && t.role === "agent");
        assert.deepEqual(agent.at(-1), {
          type: "transcript",
          role: "agent",
          turn_id: `turn_${turn}`,
          text: "Hello there",
          final: true,
        });
        assert.ok(agent.some((t) => !t.final && t.text === "Hello"), "deltas are appended");
        const userTurn = call.userTurn("I'd like to check my order status.");
        await c.until(
          () => c.texts.some((t) => t.type === "transcript" && t.role === "user" && t.final),
          20_000,
          "user transcript",
        );
        assert.equal(
          c.texts.find((t) => t.type === "transcript" && t.role === "user").turn_id,
          `turn_${userTurn}`,
        );
        const before = concat(call.input).length;
        for (const chunk of toneChunks(30, 20, 24000, 440)) c.ws.send(new Uint8Array(chunk.buffer));
        // the whole tone (half a second after its first loud sample) has reached the vendor
        const toneIn = () => {
          const all = concat(call.input).subarray(before);
          const at = all.findIndex((s) => Math.abs(s) > 3000);
          return at >= 0 && all.length - at >= Math.round(0.5 * call.rate);
        };
        await until(toneIn, 20_000, "user audio");
        const heard = concat(call.input).subarray(before);
        // the tone's samples (the silence sent while nobody talks is around them)
        const loudIdx = heard.findIndex((s) => Math.abs(s) > 3000);
        const tonePart = heard.subarray(loudIdx, loudIdx + Math.round(0.5 * call.rate));
        assert.ok(Math.abs(toneHz(tonePart, call.rate) - 440) < 15, `440 Hz at ${call.rate} Hz`);
        assert.ok(rms(tonePart) > 5000);
        // the agent's second of speech started as the client joined: once the stream holds 2.5 s of audio,
        // it holds all of it
        const audioS = () =>
          c.segments().filter((x) => x.track === 2).reduce(
            (n, x) => n + x.durations.reduce((a, d) => a + d, 0),
            0,
          ) /
          48000;
        await c.until(() => audioS() >= 2.5, 20_000, "the reply in the stream");
        await c.close();
        const loud = loudMs(await decodeStreamAudio(c.binaries));
        assert.ok(loud >= 900 && loud <= 1100, `loud ${loud} ms of 1000`);
      }, { media: true });
    } finally {
      await fake.close();
    }
  });
}

Deno.test("vendor2: while nobody talks the bridge streams silence, so the vendor's idle limit does not end the session", async () => {
  const fake = startVendor2Fake(testTls, { token: TOKEN, agents: [AGENT], idleMs: 1000 });
  try {
    await withVendors({ SVC_VENDOR2_URL: fake.url }, async ({ create, get }) => {
      const res = await create(body());
      assert.equal(res.status, 200, res.text);
      await new Promise((r) => setTimeout(r, 2500));
      assert.equal((await get(res.body.session_id)).status, "active", "still active after 2.5 idle-limits");
      const fed = concat(fake.call().input);
      assert.ok(fed.length >= 1.5 * 24000, `fed ${fed.length} samples of silence`);
      assert.ok(fed.every((s) => s === 0), "silence");
    });
  } finally {
    await fake.close();
  }
});

Deno.test("vendor2: live speech in 100 ms frames with ±15 ms jitter and a 250 ms stall reaches the vendor whole: no silence spliced in", async () => {
  const fake = startVendor2Fake(testTls, { token: TOKEN, agents: [AGENT] });
  try {
    await withVendors({ SVC_VENDOR2_URL: fake.url }, async ({ create, wsUrl }) => {
      const res = await create(body());
      const c = MediaClientRecorder.withToken(wsUrl(res.body.session_id), res.body.client_token);
      await c.until(() => c.segments().length > 0, 20_000, "stream");
      const call = fake.call();
      await streamSpeech(c.ws, { seconds: 4, frameMs: 100, jitterMs: 15, stallAtMs: 2000, stallMs: 250 });
      const heard = () => toneSpan(concat(call.input), call.rate);
      await until(() => heard().spanS >= 3.9, 20_000, "the speech at the vendor");
      const { spanS, longestQuietMs } = heard();
      assert.ok(spanS <= 4 * 1.01, `4 s of speech took ${spanS} s at the vendor (≤ 1 % added)`);
      assert.ok(longestQuietMs < 10, `a ${longestQuietMs} ms silence inside the speech`);
      await c.close();
    }, { media: true });
  } finally {
    await fake.close();
  }
});

Deno.test("vendor2: audio_output_clear flushes the avatar's speech at once", async () => {
  const fake = startVendor2Fake(testTls, { token: TOKEN, agents: [AGENT] });
  try {
    await withVendors({ SVC_VENDOR2_URL: fake.url }, async ({ create, wsUrl, plane }) => {
      const res = await create(body());
      const sid = res.body.session_id;
      const c = MediaClientRecorder.withToken(wsUrl(sid), res.body.client_token);
      await c.until(() => c.segments().length > 0, 20_000, "stream");
      const call = fake.call();
      const turn = call.speak(toneChunks(150, 20, 24000), "A long answer", { end: false });
      const media = plane!.get(sid)!.media;
      await midReply(media);
      call.bargeIn();
      await until(() => media.stats().queuedSamples === 0, 20_000, "flush");
      assert.ok(media.stats().interruptDroppedSamples > 48000, "most of the 3 s was dropped");
      await c.until(() => c.texts.some((t) => t.type === "interrupt"), 20_000, "interrupt to the client");
      call.endTurn(turn, "A long", true);
      await c.until(
        () => c.texts.some((t) => t.type === "transcript" && t.final && t.text === "A long"),
        20_000,
        "the spoken part",
      );
      await c.close();
    }, { media: true });
  } finally {
    await fake.close();
  }
});

Deno.test("vendor2: the agent hanging up ends the session as engine_ended; an agent failure as engine_failed", async () => {
  const fake = startVendor2Fake(testTls, { token: TOKEN, agents: [AGENT] });
  try {
    await withVendors({ SVC_VENDOR2_URL: fake.url }, async ({ create, get }) => {
      const a = (await create(body())).body.session_id;
      fake.call().hangup();
      await waitEnd(get, a, "ended", "engine_ended");
      const b = (await create(body())).body.session_id;
      fake.call().fail();
      await waitEnd(get, b, "ended_with_warnings", "engine_failed");
    });
  } finally {
    await fake.close();
  }
});

const FAILURES: [string, Vendor2Behavior, ReturnType<typeof body>, number, string, number | null][] = [
  ["a refused token (401)", "ok", body("eyJ-wrong"), 502, "SVC_PROVIDER_DOWNSTREAM_FAILED", null],
  ["an unknown agent (404)", "ok", body(TOKEN, "agent_unknown"), 502, "SVC_PROVIDER_DOWNSTREAM_FAILED", null],
  ["a concurrency limit (429)", "reject_429", body(), 429, "SVC_RATE_LIMIT_PROVIDER_QUOTA", 23],
  ["an overloaded vendor (503)", "reject_503", body(), 503, "SVC_PROVIDER_UNAVAILABLE", null],
  ["an agent that fails to start", "agent_failed", body(), 502, "SVC_PROVIDER_DOWNSTREAM_FAILED", null],
  ["no session_ready", "never_ready", body(), 504, "SVC_PROVIDER_TIMEOUT", null],
];

for (const [what, behavior, request, status, code, retryAfter] of FAILURES) {
  Deno.test(`vendor2: ${what} → ${status} ${code}`, async () => {
    const fake = startVendor2Fake(testTls, { token: TOKEN, agents: [AGENT], behavior });
    try {
      await withVendors(
        { SVC_VENDOR2_URL: fake.url, SVC_PROVIDER_CONNECT_TIMEOUT_MS: "600" },
        async ({ create, h }) => {
          const b = checkErrorBody(await create(request), { status, code, retryable: true });
          if (retryAfter !== null) assert.equal(b.retry_after, retryAfter, "the vendor's Retry-After");
          for (const leak of [TOKEN, "eyJ-wrong", "localhost", "cartesia", "agent_", "access_token"]) {
            assert.ok(!String(b.message).toLowerCase().includes(leak.toLowerCase()), `message leaks ${leak}`);
          }
          assert.ok(!h.logs.join("\n").includes("access_token"), "no vendor URL query in the logs");
          assert.equal((await h.kv.get(["project", "proj_vendor", "live_sessions"])).value, 0, "slot freed");
        },
      );
    } finally {
      await fake.close();
    }
  });
}

Deno.test("vendor2: unreachable → 503 SVC_PROVIDER_UNAVAILABLE", async () => {
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  await withVendors(
    { SVC_VENDOR2_URL: `wss://localhost:${port}/v1/agents/websocket` },
    async ({ create }) => {
      checkErrorBody(await create(body()), {
        status: 503,
        code: "SVC_PROVIDER_UNAVAILABLE",
        retryable: true,
      });
    },
  );
});
