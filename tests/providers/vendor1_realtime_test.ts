/**
 * The vendor1 realtime bridge against its protocol-faithful fake (testing/fakes/vendor1_realtime.ts), through
 * the real HTTP API: an active session, the client secret presented as `Authorization: Bearer` and nowhere
 * else, agent audio → fMP4 fragments with sound, microphone PCM → `input_audio_buffer.append` at the
 * session's rate (PCM16 24 kHz, or µ-law 8 kHz), barge-in → flush and `conversation.item.truncate`,
 * transcripts, the vendor's ends (time limit → engine_ended; server error → engine_failed), and every start
 * failure mapped to the contract's codes.
 */
import assert from "node:assert/strict";
import {
  startVendor1Fake,
  type Vendor1Behavior,
  type Vendor1Options,
} from "../../testing/fakes/vendor1_realtime.ts";
import { rms, toneHz, until } from "../../testing/fakes/server.ts";
import { checkErrorBody } from "../../testing/fixtures.ts";
import { MediaClientRecorder } from "../../testing/media.ts";
import { concat, decodeStreamAudio, loudMs, midReply, testTls, toneChunks, withVendors } from "./_helpers.ts";

const SECRET = `ek_test_${crypto.randomUUID().replaceAll("-", "")}`;
const body = (secret = SECRET) => ({
  provider_type: "vendor1_realtime",
  provider_config: { vendor1_realtime: { client_secret: secret } },
});

Deno.test("vendor1_realtime: active through the API; the secret goes in Authorization: Bearer and nowhere else; a graceful end closes 1000", async () => {
  const fake = startVendor1Fake(testTls, { secret: SECRET });
  try {
    await withVendors({ SVC_VENDOR1_REALTIME_URL: fake.url }, async ({ h, create, key, get }) => {
      const res = await create(body());
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.status, "active");
      assert.equal((await get(res.body.session_id)).provider_type, "vendor1_realtime");
      const seen = fake.server.requests[0];
      assert.equal(seen.headers.get("authorization"), `Bearer ${SECRET}`);
      assert.equal(seen.url.pathname, "/v1/realtime");
      assert.ok(!seen.url.href.includes(SECRET), "not in the URL");
      for (const [name, value] of seen.headers) {
        if (name !== "authorization") assert.ok(!value.includes(SECRET), `not in ${name}`);
      }
      assert.ok(!(seen.headers.get("sec-websocket-protocol") ?? "").includes(SECRET), "not a subprotocol");
      assert.ok(!res.text.includes(SECRET) && !h.logs.join("\n").includes(SECRET));
      const ended = await h.req("POST", `/v1/sessions/${res.body.session_id}/end`, { key });
      assert.equal(ended.status, 200, ended.text);
      assert.equal((await fake.call().ws.closed).code, 1000);
      assert.equal((await get(res.body.session_id)).status, "ended");
      await new Promise((r) => setTimeout(r, 100));
      assert.ok(!h.logs.join("\n").includes("engine start failed"), "a normal end logs no start failure");
    });
  } finally {
    await fake.close();
  }
});

for (const format of ["pcm", "pcmu"] as const) {
  Deno.test(`vendor1_realtime (${format}): agent audio plays with sound, transcripts reach the client, the microphone reaches the vendor at its rate`, async () => {
    const fake = startVendor1Fake(testTls, { secret: SECRET, format });
    try {
      await withVendors({ SVC_VENDOR1_REALTIME_URL: fake.url }, async ({ create, wsUrl }) => {
        const res = await create(body());
        assert.equal(res.status, 200, res.text);
        const sid = res.body.session_id;
        const c = MediaClientRecorder.withToken(wsUrl(sid), res.body.client_token);
        await c.until(() => c.segments().length > 0, 20_000, "stream");
        assert.equal(c.texts[0].input_sample_rate, 24000, "clients send 24 kHz");
        const call = fake.call();
        // 1 s of agent speech, sent at once (the vendor runs ahead of playout)
        call.speak(toneChunks(50, 20, call.rate, 300), "Hello there");
        await c.until(
          () => c.texts.some((t) => t.type === "transcript" && t.role === "agent" && t.final),
          20_000,
          "agent transcript",
        );
        const agent = c.texts.filter((t) => t.type === "transcript" && t.role === "agent");
        assert.equal(agent.at(-1).text, "Hello there");
        assert.ok(agent.some((t) => !t.final && t.text === "Hello"), "deltas add up to the text so far");
        call.userTranscript("item_u1", "what's the weather");
        await c.until(
          () => c.texts.some((t) => t.type === "transcript" && t.role === "user" && t.final),
          20_000,
          "user transcript",
        );
        assert.deepEqual(
          c.texts.find((t) => t.type === "transcript" && t.role === "user" && t.final),
          { type: "transcript", role: "user", turn_id: "item_u1", text: "what's the weather", final: true },
        );
        // 0.6 s of microphone at 24 kHz, 440 Hz
        for (const chunk of toneChunks(30, 20, 24000, 440)) c.ws.send(new Uint8Array(chunk.buffer));
        const expected = 0.6 * call.rate;
        await until(() => concat(call.input).length >= expected - 200, 20_000, "user audio at the vendor");
        const heard = concat(call.input);
        assert.ok(Math.abs(heard.length - expected) < 200, `${heard.length} samples at ${call.rate} Hz`);
        assert.ok(Math.abs(toneHz(heard.subarray(100), call.rate) - 440) < 15, "the tone survives");
        assert.ok(rms(heard.subarray(100)) > 5000, "at its level");
        // the agent's second of speech started as the client joined: once the stream holds 2.5 s of audio,
        // it holds all of it
        const audioS = () =>
          c.segments().filter((x) => x.track === 2).reduce(
            (n, x) => n + x.durations.reduce((a, d) => a + d, 0),
            0,
          ) /
          48000;
        await c.until(() => audioS() >= 2.5, 20_000, "the speech in the stream");
        await c.close();
        const loud = loudMs(await decodeStreamAudio(c.binaries));
        assert.ok(loud >= 900 && loud <= 1100, `loud ${loud} ms of 1000`);
        assert.deepEqual(call.clientErrors, []);
      }, { media: true });
    } finally {
      await fake.close();
    }
  });
}

Deno.test("vendor1_realtime: barge-in flushes the avatar's speech at once and truncates the item to what was heard", async () => {
  const fake = startVendor1Fake(testTls, { secret: SECRET });
  try {
    await withVendors({ SVC_VENDOR1_REALTIME_URL: fake.url }, async ({ create, wsUrl, plane }) => {
      const res = await create(body());
      const sid = res.body.session_id;
      const c = MediaClientRecorder.withToken(wsUrl(sid), res.body.client_token);
      await c.until(() => c.segments().length > 0, 20_000, "stream");
      const call = fake.call();
      const { itemId } = call.speak(toneChunks(150, 20, 24000), "A long answer", { done: false });
      const media = plane!.get(sid)!.media;
      await midReply(media);
      call.userSpeaks();
      await until(() => media.stats().queuedSamples === 0, 20_000, "flush");
      assert.ok(media.stats().interruptDroppedSamples > 48000, "most of the 3 s was dropped");
      await c.until(() => c.texts.some((t) => t.type === "interrupt"), 20_000, "interrupt to the client");
      await until(() => call.truncations.length > 0, 20_000, "truncate");
      const t = call.truncations[0];
      assert.equal(t.itemId, itemId);
      assert.ok(t.audioEndMs > 200 && t.audioEndMs < 2000, `truncated at ${t.audioEndMs} ms`);
      assert.deepEqual(call.clientErrors, [], "the truncate was valid");
      // late audio of the cancelled response is not played
      const before = media.stats().queuedSamples;
      call.send({
        type: "response.output_audio.delta",
        response_id: "resp_1",
        item_id: itemId,
        output_index: 0,
        content_index: 0,
        delta: new Uint8Array(9600).toBase64(),
      });
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(media.stats().queuedSamples, before);
      await c.close();
    }, { media: true });
  } finally {
    await fake.close();
  }
});

Deno.test("vendor1_realtime: the model goes in the URL's model query (SVC_VENDOR1_REALTIME_MODEL, default gpt-realtime); a URL that names one is kept", async () => {
  const fake = startVendor1Fake(testTls, {
    secret: SECRET,
    models: ["gpt-realtime", "gpt-realtime-mini", "pinned"],
  });
  try {
    await withVendors({ SVC_VENDOR1_REALTIME_URL: fake.url }, async ({ create }) => {
      assert.equal((await create(body())).status, 200);
      assert.equal(fake.server.requests.at(-1)!.url.search, "?model=gpt-realtime");
    });
    await withVendors(
      { SVC_VENDOR1_REALTIME_URL: fake.url, SVC_VENDOR1_REALTIME_MODEL: "gpt-realtime-mini" },
      async ({ create }) => {
        assert.equal((await create(body())).status, 200);
        assert.equal(fake.server.requests.at(-1)!.url.search, "?model=gpt-realtime-mini");
      },
    );
    await withVendors(
      {
        SVC_VENDOR1_REALTIME_URL: `${fake.url}?model=pinned`,
        SVC_VENDOR1_REALTIME_MODEL: "gpt-realtime-mini",
      },
      async ({ create }) => {
        assert.equal((await create(body())).status, 200);
        assert.equal(fake.server.requests.at(-1)!.url.search, "?model=pinned", "the configured URL's model");
      },
    );
  } finally {
    await fake.close();
  }
});

const MODEL_FAILURES: [string, Partial<Vendor1Options>][] = [
  ["an unknown model (invalid_model, close 4000)", { models: ["gpt-realtime-2"] }],
  ["a missing model (missing_model, close 4000)", { behavior: "missing_model" }],
];
for (const [what, options] of MODEL_FAILURES) {
  Deno.test(`vendor1_realtime: ${what} → 400 SVC_PROVIDER_MISCONFIGURED, not retryable, provider-agnostic`, async () => {
    const fake = startVendor1Fake(testTls, { secret: SECRET, ...options });
    try {
      await withVendors({ SVC_VENDOR1_REALTIME_URL: fake.url }, async ({ create, h }) => {
        const b = checkErrorBody(await create(body()), {
          status: 400,
          code: "SVC_PROVIDER_MISCONFIGURED",
          retryable: false,
        });
        assert.equal(b.message, "The conversation engine does not accept the configured model.");
        assert.equal((await h.kv.get(["project", "proj_vendor", "live_sessions"])).value, 0, "slot freed");
      });
    } finally {
      await fake.close();
    }
  });
}

Deno.test("vendor1_realtime: with interrupt_response false, speech_started still flushes the avatar's speech, and the bridge cancels the response", async () => {
  const fake = startVendor1Fake(testTls, { secret: SECRET, interruptResponse: false });
  try {
    await withVendors({ SVC_VENDOR1_REALTIME_URL: fake.url }, async ({ create, wsUrl, plane }) => {
      const res = await create(body());
      const sid = res.body.session_id;
      const c = MediaClientRecorder.withToken(wsUrl(sid), res.body.client_token);
      await c.until(() => c.segments().length > 0, 20_000, "stream");
      const call = fake.call();
      call.speak(toneChunks(150, 20, 24000), "A long answer", { done: false });
      const media = plane!.get(sid)!.media;
      await midReply(media);
      call.userSpeaks();
      await until(() => media.stats().queuedSamples === 0, 20_000, "flush");
      assert.ok(media.stats().interruptDroppedSamples > 48000, "most of the 3 s was dropped");
      await c.until(() => c.texts.some((t) => t.type === "interrupt"), 20_000, "interrupt to the client");
      await until(() => call.responseCancels === 1, 20_000, "response.cancel");
      assert.deepEqual(call.clientErrors, []);
      await c.close();
    }, { media: true });
  } finally {
    await fake.close();
  }
});

Deno.test("vendor1_realtime: the vendor's time limit (error session_expired, close 1001) ends the session as engine_ended; a server error as engine_failed", async () => {
  const fake = startVendor1Fake(testTls, { secret: SECRET });
  try {
    await withVendors({ SVC_VENDOR1_REALTIME_URL: fake.url }, async ({ create, get }) => {
      const a = (await create(body())).body.session_id;
      fake.call().expire();
      await waitEnd(get, a, "ended", "engine_ended");
      const b = (await create(body())).body.session_id;
      fake.call().fail();
      await waitEnd(get, b, "ended_with_warnings", "engine_failed");
    });
  } finally {
    await fake.close();
  }
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

const FAILURES: [Vendor1Behavior, number, string, number | null][] = [
  ["reject_401", 502, "SVC_PROVIDER_DOWNSTREAM_FAILED", null],
  ["error_invalid_key", 502, "SVC_PROVIDER_DOWNSTREAM_FAILED", null],
  ["reject_429", 429, "SVC_RATE_LIMIT_PROVIDER_QUOTA", 17],
  ["error_quota", 429, "SVC_RATE_LIMIT_PROVIDER_QUOTA", null],
  ["reject_503", 503, "SVC_PROVIDER_UNAVAILABLE", null],
  ["never_ready", 504, "SVC_PROVIDER_TIMEOUT", null],
];

for (const [behavior, status, code, retryAfter] of FAILURES) {
  Deno.test(`vendor1_realtime: ${behavior} → ${status} ${code}`, async () => {
    const fake = startVendor1Fake(testTls, { secret: SECRET, behavior, retryAfterS: 17 });
    try {
      await withVendors(
        { SVC_VENDOR1_REALTIME_URL: fake.url, SVC_PROVIDER_CONNECT_TIMEOUT_MS: "600" },
        async ({ create, h }) => {
          const res = await create(body());
          const b = checkErrorBody(res, { status, code, retryable: status !== 400 });
          if (retryAfter !== null) assert.equal(b.retry_after, retryAfter, "the vendor's Retry-After");
          for (
            const leak of [
              SECRET,
              "localhost",
              "127.0.0.1",
              "openai",
              "realtime",
              String(new URL(fake.url).port),
            ]
          ) {
            assert.ok(!String(b.message).toLowerCase().includes(leak.toLowerCase()), `message leaks ${leak}`);
          }
          assert.equal((await h.kv.get(["project", "proj_vendor", "live_sessions"])).value, 0, "slot freed");
        },
      );
    } finally {
      await fake.close();
    }
  });
}

Deno.test("vendor1_realtime: unreachable → 503 SVC_PROVIDER_UNAVAILABLE", async () => {
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  await withVendors(
    { SVC_VENDOR1_REALTIME_URL: `wss://localhost:${port}/v1/realtime` },
    async ({ create }) => {
      checkErrorBody(await create(body()), {
        status: 503,
        code: "SVC_PROVIDER_UNAVAILABLE",
        retryable: true,
      });
    },
  );
});
