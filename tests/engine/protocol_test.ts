import assert from "node:assert/strict";
import { type ReferenceEngineOptions, startReferenceEngine } from "../../engine/mod.ts";
import { FakeTts, silence, sleep, testTls, TOKEN, tone, withEngine } from "./_helpers.ts";
import { until } from "../../testing/deadline.ts";

async function engineWith(options: Partial<ReferenceEngineOptions> = {}) {
  const tls = await testTls();
  return () =>
    startReferenceEngine({
      tls,
      authToken: TOKEN,
      greeting: null,
      tts: new FakeTts(200),
      ...options,
    });
}

/** Sends a raw HTTP/1.1 request over TLS (ALPN http/1.1) and returns the status line. */
async function rawStatusLine(port: number, caPem: string, headers: string): Promise<string> {
  const conn = await Deno.connectTls({
    hostname: "localhost",
    port,
    caCerts: [caPem],
    alpnProtocols: ["http/1.1"],
  });
  try {
    await conn.write(new TextEncoder().encode(
      `GET /v0 HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
        `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n${headers}\r\n`,
    ));
    const buf = new Uint8Array(2048);
    const n = await conn.read(buf);
    return new TextDecoder().decode(buf.subarray(0, n ?? 0)).split("\r\n")[0];
  } finally {
    conn.close();
  }
}

Deno.test("protocol: handshake answers session.ready with the output format", async () => {
  await withEngine(await engineWith(), async (engine, connect) => {
    assert.match(engine.url, /^wss:\/\/localhost:\d+\/v0$/);
    assert.equal(engine.url, `wss://localhost:${engine.port}/v0`);
    const client = await connect();
    assert.equal(client.ws.protocol, "avatar-engine.v0");
    client.start(16000, { event_id: "e1" });
    const ready = await client.next("session.ready");
    assert.equal(ready.session_id, "session:test");
    assert.match(String(ready.engine_session_id), /^eng_/);
    assert.deepEqual(ready.audio, { output: { encoding: "pcm_s16le", sample_rate: 24000, channels: 1 } });
    const stats = engine.stats();
    assert.equal(stats.connections, 1);
    assert.equal(stats.sessions[0].session_id, "session:test");
    assert.equal(stats.sessions[0].engine_session_id, ready.engine_session_id);
    // no greeting configured: nothing else arrives
    await sleep(100);
    assert.deepEqual(client.messages().map((m) => m.type), ["session.ready"]);
  });
});

Deno.test("protocol: the configured output rate is declared; no subprotocol offered is accepted", async () => {
  await withEngine(await engineWith({ outputSampleRate: 16000 }), async (_engine, connect) => {
    const client = await connect({ protocols: [] });
    assert.equal(client.ws.protocol, "");
    client.start(48000);
    const ready = await client.next("session.ready");
    assert.deepEqual(ready.audio, { output: { encoding: "pcm_s16le", sample_rate: 16000, channels: 1 } });
  });
});

Deno.test("protocol: a wrong or missing token is refused with 401 before the upgrade", async () => {
  const tls = await testTls();
  await withEngine(await engineWith(), async (engine, connect) => {
    // Deno's WebSocket client reaches Deno.serve over HTTP/2 (RFC 8441); Deno.serve resets a refused
    // extended CONNECT stream, so the client sees a connection failure rather than the status code.
    const wrong = await connect({ token: "not-the-token" });
    assert.equal(wrong.ws.readyState, WebSocket.CLOSED);
    assert.match(String(wrong.errorMessage), /failed to connect to WebSocket/);
    assert.equal((await wrong.waitClosed()).wasClean, false);
    const missing = await connect({ token: null });
    assert.equal(missing.ws.readyState, WebSocket.CLOSED);
    assert.match(String(missing.errorMessage), /failed to connect to WebSocket/);
    // Over HTTP/1.1 the status is visible.
    assert.match(
      await rawStatusLine(engine.port, tls.caPem, "Authorization: Bearer nope\r\n"),
      /^HTTP\/1\.1 401/,
    );
    assert.match(await rawStatusLine(engine.port, tls.caPem, ""), /^HTTP\/1\.1 401/);
    assert.match(
      await rawStatusLine(engine.port, tls.caPem, `Authorization: bearer ${TOKEN}\r\n`),
      /^HTTP\/1\.1 101/,
    );
    const stats = engine.stats();
    assert.equal(stats.rejected_auth, 4);
    // the one raw connection that passed is counted; refused ones are not
    assert.equal(stats.connections, 1);
  });
});

Deno.test("protocol: authFailure close_4001 reports bad credentials in-band", async () => {
  await withEngine(await engineWith({ authFailure: "close_4001" }), async (engine, connect) => {
    const client = await connect({ token: "wrong" });
    const closed = await client.waitClosed();
    assert.equal(closed.code, 4001);
    const error = client.messages()[0];
    assert.equal(error.type, "error");
    assert.equal(error.code, "unauthorized");
    assert.equal(error.fatal, true);
    assert.equal(engine.stats().rejected_auth, 1);
    assert.equal(engine.stats().sessions.length, 0);
  });
});

Deno.test("protocol: other paths and plain requests are not upgraded", async () => {
  const tls = await testTls();
  await withEngine(await engineWith(), async (engine) => {
    const client = Deno.createHttpClient({ caCerts: [tls.caPem] });
    try {
      const other = await fetch(`https://localhost:${engine.port}/other`, { client });
      await other.body?.cancel();
      assert.equal(other.status, 404);
      const plain = await fetch(`https://localhost:${engine.port}/v0`, { client });
      await plain.body?.cancel();
      assert.equal(plain.status, 426);
    } finally {
      client.close();
    }
  });
});

Deno.test("protocol: a first frame other than session.start closes 4002", async () => {
  await withEngine(await engineWith(), async (engine, connect) => {
    const client = await connect();
    client.send({ type: "ping", id: 1, event_id: "x1" });
    const closed = await client.waitClosed();
    assert.equal(closed.code, 4002);
    const [error] = client.messages();
    assert.equal(error.type, "error");
    assert.equal(error.code, "invalid_message");
    assert.equal(error.fatal, true);
    assert.equal(error.event_id, "x1");
    await until(() => engine.stats().sessions[0].closed_code === 4002, "the engine to record the close");

    const garbage = await connect();
    garbage.ws.send("{not json");
    assert.equal((await garbage.waitClosed()).code, 4002);
  });
});

Deno.test("protocol: no session.start within the handshake timeout closes 4002", async () => {
  await withEngine(await engineWith({ timings: { handshakeTimeoutMs: 150 } }), async (_engine, connect) => {
    const client = await connect();
    const closed = await client.waitClosed();
    assert.equal(closed.code, 4002);
  });
});

Deno.test("protocol: an unsupported input format is refused with bad_audio_format and 4003", async () => {
  await withEngine(await engineWith(), async (_engine, connect) => {
    const cases: Array<Record<string, unknown>> = [
      { encoding: "pcm_s16le", sample_rate: 96000, channels: 1 },
      { encoding: "pcm_s16le", sample_rate: 4000, channels: 1 },
      { encoding: "pcm_s16le", sample_rate: 16000, channels: 2 },
      { encoding: "opus", sample_rate: 48000, channels: 1 },
    ];
    for (const input of cases) {
      const client = await connect();
      client.start(16000, { audio: { input }, event_id: "s1" });
      const error = await client.next("error");
      assert.equal(error.code, "bad_audio_format", JSON.stringify(input));
      assert.equal(error.fatal, true);
      assert.equal(error.event_id, "s1");
      assert.equal((await client.waitClosed()).code, 4003, JSON.stringify(input));
      assert.ok(!client.messages().some((m) => m.type === "session.ready"));
    }
  });
});

Deno.test("protocol: an unknown protocol version is refused with unsupported_protocol and 4003", async () => {
  await withEngine(await engineWith(), async (_engine, connect) => {
    const client = await connect();
    client.start(16000, { protocol: "v9" });
    assert.equal((await client.next("error")).code, "unsupported_protocol");
    assert.equal((await client.waitClosed()).code, 4003);
  });
});

Deno.test("protocol: audio before session.ready closes 1008", async () => {
  await withEngine(await engineWith(), async (_engine, connect) => {
    const client = await connect();
    client.sendAudio(tone(20, 16000), 16000);
    assert.equal((await client.waitClosed()).code, 1008);
  });
});

Deno.test("protocol: ping is answered with pong; invalid JSON is a non-fatal error; unknown types are ignored", async () => {
  await withEngine(await engineWith(), async (engine, connect) => {
    const client = await connect();
    client.start();
    await client.next("session.ready");
    client.send({ type: "ping", id: 42 });
    assert.deepEqual(await client.next("pong"), { type: "pong", id: 42 });
    client.ws.send("this is not json");
    const error = await client.next("error");
    assert.equal(error.code, "invalid_message");
    assert.equal(error.fatal, false);
    client.send({ type: "future.message", whatever: true, event_id: "f1" });
    client.send({ type: "session.start", protocol: "v0", event_id: "dup" });
    const dup = await client.next("error");
    assert.equal(dup.event_id, "dup");
    assert.equal(dup.fatal, false);
    client.ws.send(new Uint8Array(3)); // odd byte count
    assert.equal((await client.next("error")).fatal, false);
    client.send({ type: "ping", id: 43 });
    assert.deepEqual(await client.next("pong"), { type: "pong", id: 43 });
    assert.equal(client.ws.readyState, WebSocket.OPEN);
    assert.equal(client.messages().filter((m) => m.type === "error").length, 3);
    assert.equal(engine.stats().sessions[0].closed_code, null);
  });
});

Deno.test("protocol: the engine pings, and closes 4008 when the bridge stays silent", async () => {
  // (an idle timeout of a second: a busy machine's event loop may stall for a few hundred ms)
  const timings = { pingIntervalMs: 100, idleTimeoutMs: 1000 };
  await withEngine(await engineWith({ timings }), async (engine, connect) => {
    const client = await connect();
    client.start();
    await client.next("session.ready");
    const ping = await client.next("ping");
    assert.equal(typeof ping.id, "number");
    // keep the session alive for a while by answering pings, then go silent
    const t0 = performance.now();
    while (performance.now() - t0 < 1500) {
      const p = await client.next("ping");
      client.send({ type: "pong", id: p.id });
    }
    assert.equal(client.ws.readyState, WebSocket.OPEN);
    const silentSince = performance.now();
    const closed = await client.waitClosed();
    assert.equal(closed.code, 4008);
    const waited = performance.now() - silentSince;
    // not before the idle timeout (a lower bound: a busy machine only makes it later)
    assert.ok(waited >= 500, `closed after only ${waited} ms of silence`);
    await until(() => engine.stats().sessions[0].closed_code === 4008, "the engine to record the close");
  });
});

Deno.test("protocol: session.end closes with 1000 promptly", async () => {
  await withEngine(await engineWith(), async (engine, connect) => {
    const client = await connect();
    client.start();
    await client.next("session.ready");
    client.send({ type: "session.end", reason: "ended_by_api" });
    const closed = await client.waitClosed();
    assert.equal(closed.code, 1000);
    await until(() => engine.stats().sessions[0].closed_code === 1000, "the engine to record the close");
  });
});

Deno.test("protocol: engine.close() closes open sessions with 1001", async () => {
  const engine = await (await engineWith())();
  const tls = await testTls();
  const httpClient = Deno.createHttpClient({ caCerts: [tls.caPem] });
  try {
    const ws = new WebSocket(engine.url, {
      client: httpClient,
      headers: { authorization: `Bearer ${TOKEN}` },
      protocols: ["avatar-engine.v0"],
    });
    const closed = new Promise<CloseEvent>((resolve) => ws.addEventListener("close", resolve));
    await new Promise((resolve) => ws.addEventListener("open", resolve));
    await engine.close();
    assert.equal((await closed).code, 1001);
    await engine.close(); // idempotent
  } finally {
    httpClient.close();
  }
});

Deno.test("protocol: stats count user audio bytes", async () => {
  await withEngine(await engineWith(), async (engine, connect) => {
    const client = await connect();
    client.start(16000);
    await client.next("session.ready");
    const sent = client.sendAudio(silence(500, 16000), 16000);
    client.send({ type: "ping", id: 1 });
    await client.next("pong");
    assert.equal(sent, 16000);
    assert.equal(engine.stats().sessions[0].user_audio_bytes, sent);
  });
});

Deno.test("protocol: options are validated", async () => {
  const tls = await testTls();
  await assert.rejects(() => startReferenceEngine({ tls, authToken: "" }), TypeError);
  await assert.rejects(() => startReferenceEngine({ tls, authToken: "has space" }), TypeError);
  await assert.rejects(
    () => startReferenceEngine({ tls, authToken: "t", outputSampleRate: 96000 }),
    RangeError,
  );
  await assert.rejects(() => startReferenceEngine({ tls, authToken: "t", path: "v0" }), TypeError);
});

Deno.test("reference engine: beyond maxSessions, sessions are refused in-band with close 1013", async () => {
  const { generateEngineTls, startReferenceEngine } = await import("../../engine/mod.ts");
  const tls = await generateEngineTls();
  const engine = await startReferenceEngine({ tls, authToken: "tok", maxSessions: 1, greeting: null });
  const client = Deno.createHttpClient({ caCerts: [tls.caPem] });
  const open = (): Promise<{ ws: WebSocket; closed: Promise<number> }> =>
    new Promise((resolve) => {
      const ws = new WebSocket(engine.url, {
        client,
        headers: { authorization: "Bearer tok" },
        protocols: ["avatar-engine.v0"],
      });
      const closed = new Promise<number>((r) => ws.addEventListener("close", (e) => r(e.code)));
      ws.addEventListener("open", () => resolve({ ws, closed }));
    });
  try {
    const first = await open();
    const second = await open();
    if ((await second.closed) !== 1013) throw new Error("expected 1013");
    first.ws.close(1000);
    await first.closed;
  } finally {
    client.close();
    await engine.close();
  }
});
