/**
 * The vendor3 bridge against its protocol-faithful fake (testing/fakes/vendor3.ts), through the real HTTP
 * API: public agents by `agent_id` in the query; private agents through the caller's `signed_url` (used as
 * given, only on an allowed host and within its 15 minutes) or one the service mints with `api_key` (in the
 * `xi-api-key` header of the REST call only); the announced audio formats adopted (PCM 16/44.1 kHz, µ-law 8
 * kHz) both ways; pings answered with pongs; silence while nobody talks; barge-in (`interruption`) → flush,
 * stale audio dropped; transcripts; the agent's end → engine_ended; a crash → engine_failed; every start
 * failure mapped.
 */
import assert from "node:assert/strict";
import { startVendor3Fake, type Vendor3Behavior, type Vendor3Options } from "../../testing/fakes/vendor3.ts";
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

const API_KEY = `xi_${crypto.randomUUID().replaceAll("-", "")}`;
const PUBLIC = "agent_public_01";
const PRIVATE = "agent_private_01";
const OPTIONS: Vendor3Options = { publicAgents: [PUBLIC], privateAgents: [PRIVATE], apiKey: API_KEY };

const publicBody = (agent = PUBLIC) => ({
  provider_type: "vendor3",
  provider_config: { vendor3: { agent_id: agent } },
});
const signedBody = (signedUrl: string) => ({
  provider_type: "vendor3",
  provider_config: { vendor3: { agent_id: PRIVATE, signed_url: signedUrl } },
});
const keyBody = (key = API_KEY) => ({
  provider_type: "vendor3",
  provider_config: { vendor3: { agent_id: PRIVATE, api_key: key } },
});

function env(fake: { url: string; apiUrl: string }, extra: Record<string, string> = {}) {
  return {
    SVC_VENDOR3_URL: fake.url,
    SVC_VENDOR3_API_URL: fake.apiUrl,
    SVC_VENDOR3_SIGNED_URL_HOSTS: "localhost",
    ...extra,
  };
}

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

Deno.test("vendor3: a public agent by agent_id in the query; the handshake and pings are answered; idle silence keeps it alive", async () => {
  const fake = startVendor3Fake(testTls, { ...OPTIONS, pingMs: 150, idleMs: 1000 });
  try {
    await withVendors(env(fake), async ({ create, get, h, key }) => {
      const res = await create(publicBody());
      assert.equal(res.status, 200, res.text);
      const seen = fake.server.requests[0];
      assert.equal(seen.url.pathname, "/v1/convai/conversation");
      assert.equal(seen.url.search, `?agent_id=${PUBLIC}`);
      assert.equal(seen.headers.get("sec-websocket-protocol"), "convai", "the vendor client's subprotocol");
      const conversation = fake.conversation();
      assert.deepEqual(conversation.ws.received[0], { type: "conversation_initiation_client_data" });
      await new Promise((r) => setTimeout(r, 2500));
      assert.equal((await get(res.body.session_id)).status, "active", "past 2.5 idle limits");
      assert.ok(conversation.pongs.length >= 8, `${conversation.pongs.length} pongs`);
      assert.deepEqual(
        conversation.pongs,
        conversation.pongs.map((_, i) => i + 1),
        "each with its ping's event_id",
      );
      assert.ok(concat(conversation.input).length >= 1.5 * 16000, "silence at the agent's input rate");
      assert.equal((await h.req("POST", `/v1/sessions/${res.body.session_id}/end`, { key })).status, 200);
      assert.equal((await conversation.ws.closed).code, 1000);
    });
  } finally {
    await fake.close();
  }
});

Deno.test("vendor3: a caller's signed_url is used as given; other hosts, schemes and expired ones answer 400 before any connection", async () => {
  const fake = startVendor3Fake(testTls, OPTIONS);
  try {
    await withVendors(env(fake), async ({ create, h }) => {
      const signed = fake.signedUrl(PRIVATE, 60_000);
      const res = await create(signedBody(signed));
      assert.equal(res.status, 200, res.text);
      assert.equal(
        fake.server.requests[0].url.href.replace("wss:", "https:"),
        signed.replace("wss:", "https:"),
      );
      const signature = new URL(signed).searchParams.get("conversation_signature")!;
      assert.ok(
        !res.text.includes(signature) && !h.logs.join("\n").includes(signature),
        "never echoed or logged",
      );
      const requests = fake.server.requests.length;
      const cases: [string, string][] = [
        [signed.replace("localhost", "127.0.0.1"), "allowed host"],
        [fake.signedUrl(PRIVATE, 16 * 60_000), "expired"],
        [signed.replace("/v1/convai/conversation", "/v1/other"), "path"],
        [signed.replace("wss:", "ws:"), "wss"],
      ];
      for (const [url, why] of cases) {
        const b = checkErrorBody(await create(signedBody(url)), {
          status: 400,
          code: "SVC_PROVIDER_MISCONFIGURED",
        });
        assert.ok(!String(b.message).includes("localhost"), `${why}: no host in the message`);
        if (why === "allowed host" || why === "expired") {
          assert.ok(!String(b.message).includes("vendor3"), `${why}: no provider type in the message`);
        }
      }
      assert.equal(fake.server.requests.length, requests, "none of them reached the vendor");
    });
    // the default allow-list is the vendor's own hosts
    await withVendors({ SVC_VENDOR3_URL: fake.url }, async ({ create }) => {
      checkErrorBody(await create(signedBody(fake.signedUrl(PRIVATE))), {
        status: 400,
        code: "SVC_PROVIDER_MISCONFIGURED",
      });
    });
  } finally {
    await fake.close();
  }
});

Deno.test("vendor3: with api_key the service mints a signed URL (xi-api-key header only) and connects with it", async () => {
  const fake = startVendor3Fake(testTls, OPTIONS);
  try {
    await withVendors(env(fake), async ({ create, h }) => {
      const res = await create(keyBody());
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(fake.mints, [{ agentId: PRIVATE, apiKey: API_KEY }]);
      const [mint, upgrade] = fake.server.requests;
      assert.equal(mint.url.pathname, "/v1/convai/conversation/get-signed-url");
      assert.ok(!mint.url.href.includes(API_KEY), "the key is not in the mint URL");
      assert.ok(
        upgrade.url.searchParams.get("conversation_signature")?.startsWith("cvtkn_"),
        "minted signature",
      );
      assert.ok(!upgrade.url.href.includes(API_KEY), "the key is not in the conversation URL");
      for (const [name, value] of upgrade.headers) assert.ok(!value.includes(API_KEY), `not in ${name}`);
      for (const [name, value] of mint.headers) {
        if (name !== "xi-api-key") assert.ok(!value.includes(API_KEY), `not in ${name}`);
      }
      assert.ok(!res.text.includes(API_KEY) && !h.logs.join("\n").includes(API_KEY));
      assert.ok(!h.logs.join("\n").includes("conversation_signature"), "no vendor URL query in the logs");
    });
  } finally {
    await fake.close();
  }
});

const FORMATS: [string, string][] = [["pcm_16000", "pcm_16000"], ["ulaw_8000", "ulaw_8000"], [
  "pcm_44100",
  "pcm_22050",
]];
for (const [output, input] of FORMATS) {
  Deno.test(`vendor3 (agent ${output}, user ${input}): agent audio plays with sound, transcripts reach the client, the microphone reaches the agent at its rate`, async () => {
    const fake = startVendor3Fake(testTls, { ...OPTIONS, output, input });
    try {
      await withVendors(env(fake), async ({ create, wsUrl }) => {
        const res = await create(publicBody());
        assert.equal(res.status, 200, res.text);
        const c = MediaClientRecorder.withToken(wsUrl(res.body.session_id), res.body.client_token);
        await c.until(() => c.segments().length > 0, 20_000, "stream");
        const conversation = fake.conversation();
        const id = conversation.speak(toneChunks(50, 20, conversation.outputRate, 300), "Hello there");
        await c.until(
          () => c.texts.some((t) => t.type === "transcript" && t.role === "agent"),
          20_000,
          "agent",
        );
        assert.deepEqual(c.texts.find((t) => t.type === "transcript" && t.role === "agent"), {
          type: "transcript",
          role: "agent",
          turn_id: `agent_${id}`,
          text: "Hello there",
          final: true,
        });
        conversation.userSays("what's the weather");
        await c.until(
          () => c.texts.some((t) => t.type === "transcript" && t.role === "user" && t.final),
          20_000,
          "user transcript",
        );
        const user = c.texts.filter((t) => t.type === "transcript" && t.role === "user");
        assert.deepEqual(user.map((t) => [t.turn_id, t.text, t.final]), [
          ["user_1", "what", false],
          ["user_1", "what's the weather", true],
        ]);
        for (const chunk of toneChunks(30, 20, 24000, 440)) c.ws.send(new Uint8Array(chunk.buffer));
        // the whole tone (half a second after its first loud sample) has reached the vendor
        const toneIn = () => {
          const all = concat(conversation.input);
          const at = all.findIndex((s) => Math.abs(s) > 3000);
          return at >= 0 && all.length - at >= Math.round(0.5 * conversation.inputRate);
        };
        await until(toneIn, 20_000, "user audio");
        const heard = concat(conversation.input);
        const start = heard.findIndex((s) => Math.abs(s) > 3000);
        const tonePart = heard.subarray(start, start + Math.round(0.5 * conversation.inputRate));
        assert.ok(
          Math.abs(toneHz(tonePart, conversation.inputRate) - 440) < 15,
          `440 Hz at ${conversation.inputRate}`,
        );
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

Deno.test("vendor3: live speech in 100 ms frames with ±15 ms jitter and a 250 ms stall reaches the agent whole: no silence spliced in", async () => {
  const fake = startVendor3Fake(testTls, OPTIONS);
  try {
    await withVendors(env(fake), async ({ create, wsUrl }) => {
      const res = await create(publicBody());
      const c = MediaClientRecorder.withToken(wsUrl(res.body.session_id), res.body.client_token);
      await c.until(() => c.segments().length > 0, 20_000, "stream");
      const conversation = fake.conversation();
      await streamSpeech(c.ws, {
        seconds: 4,
        frameMs: 100,
        jitterMs: 15,
        stallAtMs: 2000,
        stallMs: 250,
        seed: 42,
      });
      const heard = () => toneSpan(concat(conversation.input), conversation.inputRate);
      await until(() => heard().spanS >= 3.9, 20_000, "the speech at the agent");
      const { spanS, longestQuietMs } = heard();
      assert.ok(spanS <= 4 * 1.01, `4 s of speech took ${spanS} s at the agent (≤ 1 % added)`);
      assert.ok(longestQuietMs < 10, `a ${longestQuietMs} ms silence inside the speech`);
      await c.close();
    }, { media: true });
  } finally {
    await fake.close();
  }
});

Deno.test("vendor3: interruption flushes the avatar's speech at once; stale audio is dropped; the next reply plays", async () => {
  const fake = startVendor3Fake(testTls, OPTIONS);
  try {
    await withVendors(env(fake), async ({ create, wsUrl, plane }) => {
      const res = await create(publicBody());
      const sid = res.body.session_id;
      const c = MediaClientRecorder.withToken(wsUrl(sid), res.body.client_token);
      await c.until(() => c.segments().length > 0, 20_000, "stream");
      const conversation = fake.conversation();
      const first = conversation.speak(toneChunks(150, 20, 16000), "A long answer about the weather");
      const media = plane!.get(sid)!.media;
      await midReply(media);
      conversation.interrupt("A long answer about the weather", "A long");
      await until(() => media.stats().queuedSamples === 0, 20_000, "flush");
      assert.ok(media.stats().interruptDroppedSamples > 48000, "most of the 3 s was dropped");
      await c.until(() => c.texts.some((t) => t.type === "interrupt"), 20_000, "interrupt to the client");
      await c.until(
        () => c.texts.some((t) => t.type === "transcript" && t.text === "A long"),
        20_000,
        "correction",
      );
      conversation.audio(toneChunks(1, 100, 16000)[0], first); // stale: before the interruption
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(media.stats().queuedSamples, 0, "stale audio is not played");
      conversation.speak(toneChunks(10, 20, 16000), "Sure");
      await until(
        () => media.stats().queuedSamples > 0 || media.stats().audioUnderruns > 0,
        20_000,
        "next reply",
      );
      await c.close();
    }, { media: true });
  } finally {
    await fake.close();
  }
});

Deno.test("vendor3: the agent ending the call ends the session as engine_ended; a crash as engine_failed", async () => {
  const fake = startVendor3Fake(testTls, OPTIONS);
  try {
    await withVendors(env(fake), async ({ create, get }) => {
      const a = (await create(publicBody())).body.session_id;
      fake.conversation().end();
      await waitEnd(get, a, "ended", "engine_ended");
      const b = (await create(publicBody())).body.session_id;
      fake.conversation().fail();
      await waitEnd(get, b, "ended_with_warnings", "engine_failed");
    });
  } finally {
    await fake.close();
  }
});

type Case = [string, Vendor3Behavior, () => Record<string, unknown>, number, string, number | null];
const FAILURES: Case[] = [
  [
    "a private agent without a signature (403)",
    "ok",
    () => publicBody(PRIVATE),
    502,
    "SVC_PROVIDER_DOWNSTREAM_FAILED",
    null,
  ],
  [
    "a refused API key (mint 401)",
    "ok",
    () => keyBody("xi_wrong"),
    502,
    "SVC_PROVIDER_DOWNSTREAM_FAILED",
    null,
  ],
  ["a rate-limited mint (429)", "mint_429", () => keyBody(), 429, "SVC_RATE_LIMIT_PROVIDER_QUOTA", 29],
  ["an unavailable mint (503)", "mint_503", () => keyBody(), 503, "SVC_PROVIDER_UNAVAILABLE", null],
  [
    "a concurrency limit at upgrade (429)",
    "reject_429",
    () => publicBody(),
    429,
    "SVC_RATE_LIMIT_PROVIDER_QUOTA",
    29,
  ],
  ["an overloaded vendor (503)", "reject_503", () => publicBody(), 503, "SVC_PROVIDER_UNAVAILABLE", null],
  [
    "a quota error after the upgrade",
    "error_quota",
    () => publicBody(),
    429,
    "SVC_RATE_LIMIT_PROVIDER_QUOTA",
    null,
  ],
  ["no metadata", "never_ready", () => publicBody(), 504, "SVC_PROVIDER_TIMEOUT", null],
];

for (const [what, behavior, request, status, code, retryAfter] of FAILURES) {
  Deno.test(`vendor3: ${what} → ${status} ${code}`, async () => {
    const fake = startVendor3Fake(testTls, { ...OPTIONS, behavior });
    try {
      await withVendors(env(fake, { SVC_PROVIDER_CONNECT_TIMEOUT_MS: "600" }), async ({ create, h }) => {
        const b = checkErrorBody(await create(request()), { status, code, retryable: true });
        if (retryAfter !== null) assert.equal(b.retry_after, retryAfter, "the vendor's Retry-After");
        for (const leak of [API_KEY, "xi_wrong", "localhost", "elevenlabs", "agent_", "signature"]) {
          assert.ok(!String(b.message).toLowerCase().includes(leak.toLowerCase()), `message leaks ${leak}`);
        }
        assert.equal((await h.kv.get(["project", "proj_vendor", "live_sessions"])).value, 0, "slot freed");
      });
    } finally {
      await fake.close();
    }
  });
}

Deno.test("vendor3: unreachable (the conversation URL, or the mint API) → 503 SVC_PROVIDER_UNAVAILABLE", async () => {
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  await withVendors({
    SVC_VENDOR3_URL: `wss://localhost:${port}/v1/convai/conversation`,
    SVC_VENDOR3_API_URL: `https://localhost:${port}`,
  }, async ({ create }) => {
    checkErrorBody(await create(publicBody()), {
      status: 503,
      code: "SVC_PROVIDER_UNAVAILABLE",
      retryable: true,
    });
    checkErrorBody(await create(keyBody()), {
      status: 503,
      code: "SVC_PROVIDER_UNAVAILABLE",
      retryable: true,
    });
  });
});
