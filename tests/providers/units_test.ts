/**
 * Units of the provider bridges: G.711, the band-limited resampler, audio formats, the vendor3 signed-URL
 * rules, `Retry-After`, the shared start-failure map, the barge-in bookkeeping, and the shared keepalive and
 * connect deadline against raw sockets that go silent.
 */
import assert from "node:assert/strict";
import { decodeAlaw, decodeMulaw, encodeAlaw, encodeMulaw } from "../../src/providers/audio/g711.ts";
import { SincResampler } from "../../src/providers/audio/resampler.ts";
import { AgentAudioDecoder, parseRateFormat, UserAudioEncoder } from "../../src/providers/audio/format.ts";
import {
  signedUrlMintedAt as mintedAtOf,
  signedUrlProblem as problemOf,
} from "../../src/providers/definitions/vendor3_signed_url.ts";
import { endpointOf } from "../../src/providers/wire/endpoint.ts";
import { classifyNativeFailure, parseRetryAfter, WireError } from "../../src/providers/wire/failure.ts";
import { wireClient } from "../../src/providers/wire/upgrade.ts";
import { splitUrl } from "../../src/auth/credential_url.ts";
import { vendorStartFailure } from "../../src/providers/wire/handshake.ts";
import { AgentTurns } from "../../src/providers/agent_turns.ts";
import { createBridges } from "../../src/providers/bridges.ts";
import { loadConfig } from "../../src/config.ts";
import { silentLogger } from "../../src/log.ts";
import { CredentialHolder } from "../../src/auth/credential_holder.ts";
import type { ProviderClosure, ProviderEvents } from "../../src/providers/types.ts";
import { ApiError } from "../../src/errors.ts";
import { rms, tone, toneHz } from "../../testing/fakes/server.ts";
import { testTls } from "./_helpers.ts";

Deno.test("agent audio decoder: PCM16 and G.711 from base64, an odd byte dropped, its buffer reused and grown, bad base64 refused", () => {
  const d = new AgentAudioDecoder();
  const pcm = Int16Array.from({ length: 480 }, (_, i) => (i * 97) % 20000 - 10000);
  const b64 = (x: Int16Array | Uint8Array) => new Uint8Array(x.buffer, x.byteOffset, x.byteLength).toBase64();
  const fmt = { encoding: "pcm_s16le", sampleRate: 24000 } as const;
  const first = d.decode(b64(pcm), fmt);
  assert.deepEqual([...first], [...pcm]);
  // the next chunk is written over the first (the media plane copies what it keeps)
  const second = d.decode(b64(pcm.subarray(0, 10).map((x) => -x)), fmt);
  assert.deepEqual([...second], [...pcm.subarray(0, 10)].map((x) => -x));
  assert.equal(first.buffer, second.buffer, "one buffer, reused");
  // an odd trailing byte is dropped
  assert.equal(d.decode(new Uint8Array([1, 0, 2, 0, 9]).toBase64(), fmt).length, 2);
  // a chunk larger than the buffer grows it
  const big = Int16Array.from({ length: 24000 }, (_, i) => i % 3000);
  assert.deepEqual([...d.decode(b64(big), fmt)], [...big]);
  const law = Uint8Array.from({ length: 256 }, (_, i) => i);
  assert.deepEqual([...d.decode(law.toBase64(), { encoding: "mulaw", sampleRate: 8000 })], [
    ...decodeMulaw(law),
  ]);
  assert.deepEqual([...d.decode(law.toBase64(), { encoding: "alaw", sampleRate: 8000 })], [
    ...decodeAlaw(law),
  ]);
  assert.throws(() => d.decode("A$A=", fmt), SyntaxError);
});

Deno.test("g711: µ-law and A-law reference points, and every code survives a round trip", () => {
  assert.deepEqual([...encodeMulaw(Int16Array.of(0, 32767, -32768))], [0xff, 0x80, 0x00]);
  assert.deepEqual([...decodeMulaw(Uint8Array.of(0xff, 0x80, 0x00))], [0, 32124, -32124]);
  assert.deepEqual([...encodeAlaw(Int16Array.of(0, 32767, -32768))], [0xd5, 0xaa, 0x2a]);
  assert.deepEqual([...decodeAlaw(Uint8Array.of(0xd5, 0x55))], [8, -8]);
  for (let b = 0; b < 256; b++) {
    assert.equal(encodeAlaw(decodeAlaw(Uint8Array.of(b)))[0], b);
    if (b !== 0x7f) assert.equal(encodeMulaw(decodeMulaw(Uint8Array.of(b)))[0], b); // 0x7f and 0xff both mean 0
  }
});

Deno.test("resampler: keeps the passband, removes what would alias, and is seamless across chunks", () => {
  for (const [inRate, outRate] of [[24000, 16000], [24000, 8000], [24000, 44100], [24000, 22050]]) {
    const input = tone(24000, inRate, 1000, 10_000);
    const whole = new SincResampler(inRate, outRate).process(input);
    const chunked = new SincResampler(inRate, outRate);
    const parts: number[] = [];
    for (let i = 0; i < input.length; i += 480) parts.push(...chunked.process(input.subarray(i, i + 480)));
    assert.ok(Math.abs(parts.length - whole.length) <= 1, "same length chunked or not");
    assert.deepEqual(parts.slice(0, whole.length - 1), [...whole.subarray(0, whole.length - 1)], "seamless");
    assert.ok(Math.abs(whole.length - outRate) < 64, `${inRate}→${outRate}: ${whole.length} samples`);
    const steady = whole.subarray(200, whole.length - 200);
    assert.ok(Math.abs(rms(steady) - 7071) < 70, `passband level ${rms(steady)}`);
    assert.ok(Math.abs(toneHz(steady, outRate) - 1000) < 5);
  }
  // a 10 kHz tone cannot exist at 16 kHz: it must vanish, not fold to 6 kHz
  const aliased = new SincResampler(24000, 16000).process(tone(24000, 24000, 10_000, 10_000));
  assert.ok(rms(aliased.subarray(200)) < 70, `alias level ${rms(aliased.subarray(200))} (−40 dB)`);
});

Deno.test("audio formats: the vendors' names, and the encoder's rate and encoding", () => {
  assert.deepEqual(parseRateFormat("pcm_16000"), { encoding: "pcm_s16le", sampleRate: 16000 });
  assert.deepEqual(parseRateFormat("pcm_44100"), { encoding: "pcm_s16le", sampleRate: 44100 });
  assert.deepEqual(parseRateFormat("ulaw_8000"), { encoding: "mulaw", sampleRate: 8000 });
  assert.deepEqual(parseRateFormat("mulaw_8000"), { encoding: "mulaw", sampleRate: 8000 });
  for (const bad of ["pcm_96000", "ulaw_16000", "mp3_44100", "pcm", 16000, null]) {
    assert.equal(parseRateFormat(bad), null);
  }
  const pcm = tone(480, 24000);
  const same = new UserAudioEncoder({ encoding: "pcm_s16le", sampleRate: 24000 });
  assert.deepEqual(
    Uint8Array.fromBase64(same.encode(new Uint8Array(pcm.buffer))!),
    new Uint8Array(pcm.buffer),
  );
  const mulaw = new UserAudioEncoder({ encoding: "mulaw", sampleRate: 8000 });
  let bytes = 0;
  for (let i = 0; i < 10; i++) {
    bytes += Uint8Array.fromBase64(mulaw.encode(new Uint8Array(pcm.buffer)) ?? "").length;
  }
  assert.ok(Math.abs(bytes - 1600) < 20, `${bytes} µ-law bytes for 200 ms`);
  assert.equal(Uint8Array.fromBase64(mulaw.silence(100)).length, 800);
  assert.ok(Uint8Array.fromBase64(mulaw.silence(100)).every((b) => b === 0xff), "µ-law silence");
});

Deno.test("vendor3 signed URLs: wss, the path, an allowed host, and 15 minutes from the minting time in the signature", () => {
  const hosts = ["api.elevenlabs.io", "api.eu.residency.elevenlabs.io"];
  // The rules read the URL's bytes (a signed URL is a credential).
  const signedUrlProblem = (url: string, allowed: string[], now: number) =>
    problemOf(new TextEncoder().encode(url), allowed, now);
  const signedUrlMintedAt = (url: URL, now: number) => {
    const bytes = new TextEncoder().encode(url.href);
    return mintedAtOf(bytes, splitUrl(bytes, "wss")!, now);
  };
  const example = new URL(
    "wss://api.elevenlabs.io/v1/convai/conversation?agent_id=a&conversation_signature=cvtkn_01jy2tnmcrextbp4rhtb6h0e9f",
  );
  assert.equal(new Date(signedUrlMintedAt(example, Date.now())!).toISOString(), "2025-06-19T00:50:53.976Z");
  const prefixed = new URL(example.href.replace("cvtkn_01jy", "cvtkn_2201jy"));
  assert.equal(signedUrlMintedAt(prefixed, Date.now()), signedUrlMintedAt(example, Date.now()));
  const minted = signedUrlMintedAt(example, Date.now())!;
  assert.equal(signedUrlProblem(example.href, hosts, minted + 14 * 60_000), null);
  assert.match(signedUrlProblem(example.href, hosts, minted + 16 * 60_000)!, /expired/);
  assert.match(signedUrlProblem(example.href.replace("api.", "evil."), hosts, minted)!, /allowed host/);
  assert.match(signedUrlProblem(example.href.replace("wss:", "ws:"), hosts, minted)!, /wss/);
  assert.match(signedUrlProblem(example.href.replace("conversation?", "other?"), hosts, minted)!, /path/);
  assert.match(
    signedUrlProblem(example.href.replace("wss://", "wss://u:p@"), hosts, minted)!,
    /allowed host/,
  );
  const eu = example.href.replace("api.elevenlabs.io", "API.EU.residency.elevenlabs.io");
  assert.equal(signedUrlProblem(eu, hosts, minted), null, "regional host, any case");
  // a signature of another form is the vendor's to judge
  const opaque = "wss://api.elevenlabs.io/v1/convai/conversation?agent_id=a&token=abc";
  assert.equal(signedUrlProblem(opaque, hosts, Date.now() + 3600_000), null);
  for (const text of [signedUrlProblem(eu.replace("API.EU", "x"), hosts, minted)!]) {
    assert.ok(
      !text.includes("elevenlabs") && !text.includes("vendor3"),
      "no host or provider type in messages",
    );
  }
});

Deno.test("Retry-After: delta seconds, an HTTP date, or nothing", () => {
  assert.equal(parseRetryAfter("17"), 17);
  assert.equal(parseRetryAfter(new Date(Date.now() + 30_000).toUTCString()), 30);
  assert.equal(parseRetryAfter("soon"), null);
  assert.equal(parseRetryAfter(null), null);
});

Deno.test("start failures: the map every vendor bridge shares", () => {
  const code = (f: Parameters<typeof vendorStartFailure>[0]) => vendorStartFailure(f).code;
  assert.equal(code({ kind: "unreachable" }), "SVC_PROVIDER_UNAVAILABLE");
  assert.equal(code({ kind: "refused", status: 401, retryAfterS: null }), "SVC_PROVIDER_DOWNSTREAM_FAILED");
  assert.equal(code({ kind: "refused", status: 403, retryAfterS: null }), "SVC_PROVIDER_DOWNSTREAM_FAILED");
  assert.equal(code({ kind: "refused", status: 404, retryAfterS: null }), "SVC_PROVIDER_DOWNSTREAM_FAILED");
  assert.equal(code({ kind: "refused", status: 503, retryAfterS: null }), "SVC_PROVIDER_UNAVAILABLE");
  const quota = vendorStartFailure({ kind: "refused", status: 429, retryAfterS: 42 });
  assert.equal(quota.code, "SVC_RATE_LIMIT_PROVIDER_QUOTA");
  assert.equal(quota.retryAfter, 42);
  assert.equal(vendorStartFailure({ kind: "refused", status: 429, retryAfterS: null }).retryAfter, 30);
  assert.equal(
    code({ kind: "closed", code: 1008, reason: "quota exceeded" }),
    "SVC_RATE_LIMIT_PROVIDER_QUOTA",
  );
  assert.equal(
    code({ kind: "closed", code: 1008, reason: "invalid message" }),
    "SVC_PROVIDER_DOWNSTREAM_FAILED",
  );
  assert.equal(code({ kind: "closed", code: 1013, reason: "" }), "SVC_PROVIDER_UNAVAILABLE");
  assert.equal(code({ kind: "protocol" }), "SVC_PROVIDER_DOWNSTREAM_FAILED");
  assert.equal(code({ kind: "timeout" }), "SVC_PROVIDER_TIMEOUT");
  assert.deepEqual(classifyNativeFailure("Invalid status code: 429"), {
    kind: "refused",
    status: 429,
    retryAfterS: null,
  });
  assert.deepEqual(classifyNativeFailure("tcp connect error"), { kind: "unreachable" });
  for (const f of [{ kind: "unreachable" as const }, { kind: "timeout" as const }]) {
    assert.ok(!/vendor|openai|cartesia|elevenlabs/i.test(vendorStartFailure(f).message));
  }
});

Deno.test("agent turns: barge-in interrupts only what may still be playing; played responses are left alone", () => {
  const seen: string[] = [];
  const turns = new AgentTurns({
    onResponseStarted: (id) => seen.push(`start ${id}`),
    onResponseDone: (id, s) => seen.push(`done ${id} ${s}`),
    onInterrupt: (id) => seen.push(`interrupt ${id}`),
  });
  assert.equal(turns.interrupt(), 0, "nothing playing: no flush");
  const a = turns.current();
  turns.done("completed");
  turns.start("b");
  turns.played(a);
  assert.equal(turns.interrupt(), 1);
  assert.deepEqual(seen, [
    `start ${a}`,
    `done ${a} completed`,
    "start b",
    "interrupt b",
    "done b interrupted",
  ]);
});

/** A TLS server on loopback that answers the WebSocket upgrade by hand, sends `first` and then says nothing. */
function silentServer(first: string | null, answerUpgrade = true) {
  const listener = Deno.listenTls({
    hostname: "127.0.0.1",
    port: 0,
    cert: testTls.certPem,
    key: testTls.keyPem,
  });
  const conns: Deno.Conn[] = [];
  const done = (async () => {
    for await (const conn of listener) {
      conns.push(conn);
      const buf = new Uint8Array(8192);
      const n = await conn.read(buf);
      if (!answerUpgrade || n === null) continue;
      const request = new TextDecoder().decode(buf.subarray(0, n));
      const key = /sec-websocket-key:\s*(\S+)/i.exec(request)?.[1] ?? "";
      const digest = await crypto.subtle.digest(
        "SHA-1",
        new TextEncoder().encode(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"),
      );
      const accept = new Uint8Array(digest).toBase64();
      await conn.write(new TextEncoder().encode(
        `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`,
      ));
      if (first) {
        const payload = new TextEncoder().encode(first);
        await conn.write(Uint8Array.of(0x81, payload.length, ...payload));
      }
      // then silence: no reads (pings go unanswered), no writes
    }
  })();
  return {
    url: `wss://localhost:${(listener.addr as Deno.NetAddr).port}/v1/agents/websocket`,
    async close() {
      listener.close();
      for (const c of conns) {
        try {
          c.close();
        } catch { /* closed */ }
      }
      await done.catch(() => {});
    },
  };
}

function recorder() {
  const closures: ProviderClosure[] = [];
  const events: ProviderEvents = {
    onAudio() {},
    onResponseStarted() {},
    onResponseDone() {},
    onInterrupt() {},
    onTranscript() {},
    onToolCall() {},
    onClosed: (c) => closures.push(c),
  };
  return { closures, events };
}

Deno.test("keepalive: a vendor that stops answering pings is declared dead and the session fails", async () => {
  const ready = JSON.stringify({
    type: "session_ready",
    call_id: "c",
    agent_id: "a",
    agent_version_id: "v",
    audio: { input_format: "pcm_24000" },
  });
  const server = silentServer(ready);
  const bridges = await createBridges({
    config: loadConfig({ SVC_VENDOR2_URL: server.url }),
    logger: silentLogger,
    caCerts: [testTls.caPem],
    keepalive: { intervalMs: 100, deadAfterMs: 300 },
  });
  const { closures, events } = recorder();
  try {
    const connection = await bridges.vendor2.connect({
      sessionId: "session:test",
      credentials: CredentialHolder.fromObject({ access_token: "t", agent_id: "a" }),
      timeoutMs: 5000,
      events,
      metadata: {},
    });
    await connection.released;
    assert.deepEqual(closures, [{ kind: "failed", reason: "engine_keepalive_timeout" }]);
  } finally {
    await server.close();
  }
});

Deno.test("keepalive: an external engine that stops answering its JSON pings is declared dead (the bridge skeleton's keepalive hook)", async () => {
  const ready = JSON.stringify({
    type: "session.ready",
    audio: { output: { encoding: "pcm_s16le", sample_rate: 24000, channels: 1 } },
  });
  const server = silentServer(ready);
  const bridges = await createBridges({
    config: loadConfig({}),
    logger: silentLogger,
    caCerts: [testTls.caPem],
    keepalive: { intervalMs: 100, deadAfterMs: 300 },
  });
  const { closures, events } = recorder();
  try {
    const connection = await bridges.external_engine.connect({
      sessionId: "session:test",
      credentials: CredentialHolder.fromObject({ url: server.url, auth_headers: {} }),
      timeoutMs: 5000,
      events,
      metadata: {},
    });
    assert.equal(connection.outputSampleRate, 24000);
    await connection.released;
    assert.deepEqual(closures, [{ kind: "failed", reason: "engine_keepalive_timeout" }]);
  } finally {
    await server.close();
  }
});

Deno.test("connect deadline: a vendor that accepts TCP and TLS but never answers the upgrade → 504", async () => {
  const server = silentServer(null, false);
  const bridges = await createBridges({
    config: loadConfig({ SVC_VENDOR2_URL: server.url }),
    logger: silentLogger,
    caCerts: [testTls.caPem],
  });
  try {
    const err = await bridges.vendor2.connect({
      sessionId: "session:test",
      credentials: CredentialHolder.fromObject({ access_token: "t", agent_id: "a" }),
      timeoutMs: 300,
      events: recorder().events,
      metadata: {},
    }).catch((e) => e);
    assert.ok(err instanceof ApiError);
    assert.equal(err.code, "SVC_PROVIDER_TIMEOUT");
  } finally {
    await server.close();
  }
});

Deno.test("config: the vendor endpoints, their defaults and their rules", () => {
  const d = loadConfig({}).providers;
  assert.equal(d.vendor1_realtime.url, "wss://api.openai.com/v1/realtime");
  assert.equal(d.vendor1_realtime.model, "gpt-realtime");
  assert.equal(
    loadConfig({ SVC_VENDOR1_REALTIME_MODEL: "gpt-realtime-mini" }).providers.vendor1_realtime.model,
    "gpt-realtime-mini",
  );
  assert.equal(d.vendor2.url, "wss://api.cartesia.ai/v1/agents/websocket");
  assert.equal(d.vendor3.url, "wss://api.elevenlabs.io/v1/convai/conversation");
  assert.equal(d.vendor3.apiUrl, "https://api.elevenlabs.io");
  assert.ok(d.vendor3.signedUrlHosts.includes("api.eu.residency.elevenlabs.io"));
  assert.deepEqual(d.external_engine, {});
  const hosts = loadConfig({ SVC_VENDOR3_SIGNED_URL_HOSTS: " API.Example.com , localhost" }).providers;
  assert.deepEqual(hosts.vendor3.signedUrlHosts, ["api.example.com", "localhost"]);
  for (
    const [name, value] of [
      ["SVC_VENDOR1_REALTIME_URL", "https://api.example.com/v1/realtime"],
      ["SVC_VENDOR1_REALTIME_MODEL", "gpt realtime&x=1"],
      ["SVC_VENDOR2_URL", "ws://api.example.com/x"],
      ["SVC_VENDOR3_URL", "not a url"],
      ["SVC_VENDOR3_API_URL", "https://api.example.com/?q=1"],
      ["SVC_VENDOR3_SIGNED_URL_HOSTS", ","],
    ]
  ) {
    assert.throws(
      () => loadConfig({ [name]: value }),
      (e: Error) => e.message.includes(name) && !e.message.includes("\n"),
    );
  }
  assert.equal(
    loadConfig({ SVC_VENDOR2_URL: "ws://127.0.0.1:9/a" }).providers.vendor2.url,
    "ws://127.0.0.1:9/a",
  );
});

Deno.test("engine transport: an optional subprotocol the peer does not select is accepted; a required one is not", async () => {
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    cert: testTls.certPem,
    key: testTls.keyPem,
    onListen: () => {},
  }, (req) => {
    const { socket, response } = Deno.upgradeWebSocket(req); // selects no subprotocol
    socket.onopen = () => socket.close(1000);
    return response;
  });
  const transport = wireClient({ caCerts: [testTls.caPem] });
  const url = `wss://localhost:${server.addr.port}/`;
  try {
    const socket = await transport.open({
      endpoint: endpointOf(url),
      protocols: ["convai"],
      protocolOptional: true,
      signal: new AbortController().signal,
    });
    await socket.closed;
    const err = await transport
      .open({ endpoint: endpointOf(url), protocols: ["convai"], signal: new AbortController().signal })
      .catch((e: unknown) => e);
    assert.ok(err instanceof WireError);
    assert.deepEqual(err.failure, { kind: "protocol" });
  } finally {
    await server.shutdown();
  }
});
