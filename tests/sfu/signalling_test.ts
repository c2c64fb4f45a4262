/**
 * The `webrtc_sfu` transport against a real Janus, without a browser: transport choice and
 * `stream_metadata`, who may open the signalling WebSocket, the session's Janus objects (private,
 * destroyed with the session), the contract's SFU error codes, and what a lost Janus does to a session.
 */
import assert from "node:assert/strict";
import { TokenService } from "../../src/auth/tokens.ts";
import { OffsetClock } from "../../src/clock.ts";
import { getSession } from "../../src/kv/sessions.ts";
import { JanusConnection } from "../../src/media/transports/webrtc_sfu/janus.ts";
import { toolCall } from "../../src/providers/tool_calls.ts";
import type { ToolResult } from "../../src/providers/types.ts";
import { checkErrorBody } from "../../testing/fixtures.ts";
import { freeTcpPort } from "../../testing/janus.ts";
import { MediaClientRecorder, until } from "../../testing/media.ts";
import { withSfu } from "../../testing/sfu.ts";
import { TEST_TOKEN_SECRET } from "../../testing/harness.ts";

/** A signalling client that records what it receives. */
class SignalRecorder {
  readonly ws: WebSocket;
  // deno-lint-ignore no-explicit-any
  readonly messages: any[] = [];
  closeCode: number | null = null;
  closeReason = "";
  readonly closed: Promise<void>;

  constructor(url: string, token?: string) {
    this.ws = new WebSocket(url, token ? ["avatar-sfu.v0", `bearer.${token}`] : ["avatar-sfu.v0"]);
    this.closed = new Promise((resolve) =>
      this.ws.addEventListener("close", (e) => {
        this.closeCode = e.code;
        this.closeReason = e.reason;
        resolve();
      }, { once: true })
    );
    this.ws.addEventListener("error", () => {});
    this.ws.addEventListener("message", (e) => this.messages.push(JSON.parse(String(e.data))));
  }

  of(type: string) {
    return this.messages.filter((m) => m.type === type);
  }

  async close(): Promise<void> {
    if (this.ws.readyState <= WebSocket.OPEN) this.ws.close();
    await this.closed;
  }
}

/** The mountpoints Janus has now (as an administrator sees them). */
async function mountpoints(url: string, secret: string): Promise<number[]> {
  const c = await JanusConnection.open(url, secret);
  try {
    const s = await c.createSession();
    const h = await s.attach("janus.plugin.streaming");
    const list = await h.request({ request: "list", admin_key: secret });
    await s.destroy();
    return ((list.list as { id: number }[]) ?? []).map((m) => m.id);
  } finally {
    await c.close();
  }
}

Deno.test("sfu: auto picks webrtc_sfu when the SFU is configured; stream_metadata carries sfu_endpoint, not media_url", async () => {
  await withSfu(async ({ h, key, create, base }) => {
    const auto = await create({ transport: "auto" });
    assert.equal(auto.transport, "webrtc_sfu");
    const meta = auto.stream_metadata;
    assert.equal(meta.sfu_endpoint, `${base.replace("http", "ws")}/sfu/v0/sessions/${auto.session_id}`);
    assert.equal(meta.media_url, null);
    assert.equal(meta.transport, "webrtc_sfu", "the player picks its transport's player by it");
    assert.deepEqual(meta.ice_servers, []);
    assert.ok(meta.session_token.length > 0);
    const fmp4 = await create({ transport: "websocket_fmp4" });
    assert.equal(fmp4.transport, "websocket_fmp4");
    assert.equal(fmp4.stream_metadata.sfu_endpoint, null);
    assert.equal(fmp4.stream_metadata.transport, "websocket_fmp4");
    assert.match(fmp4.stream_metadata.media_url, /\/media\/v0\/sessions\//);
    const fresh = await h.req("POST", `/v1/sessions/${auto.session_id}/client-token`, { key });
    assert.equal(fresh.status, 200);
    assert.equal(fresh.body.transport, "webrtc_sfu");
    assert.equal(fresh.body.stream_metadata.sfu_endpoint, meta.sfu_endpoint);
    assert.equal(fresh.body.stream_metadata.transport, "webrtc_sfu");
    assert.notEqual(fresh.body.stream_metadata.session_token, meta.session_token);
    for (const s of [auto, fmp4]) {
      assert.equal((await h.req("POST", `/v1/sessions/${s.session_id}/end`, { key })).status, 200);
    }
  });
});

Deno.test("sfu: only the session's own, unexpired session_token opens its signalling socket", async () => {
  await withSfu(async ({ h, create, base }) => {
    const a = await create();
    const b = await create();
    const url = a.stream_metadata.sfu_endpoint;

    const ok = new SignalRecorder(url, a.stream_metadata.session_token);
    await until(() => ok.of("offer").length === 1, 20_000, "the subscriber offer");
    assert.equal(ok.messages[0].type, "hello");
    assert.equal(ok.messages[0].transport, "webrtc_sfu");
    assert.match(ok.of("offer")[0].sdp, /H264\/90000/);
    assert.match(ok.of("offer")[0].sdp, /opus\/48000\/2/);
    assert.ok(!/pin|secret/i.test(JSON.stringify(ok.messages)), "no Janus pin or secret reaches the client");
    assert.equal(ok.ws.protocol, "avatar-sfu.v0");

    const past = new OffsetClock();
    past.advance(-10 * 60_000);
    const expired = await new TokenService({ current: TEST_TOKEN_SECRET, previous: null }, past).mint(
      a.session_id,
      "proj_sfu",
      "media",
    );
    const otherProject = await h.tokens.mint(a.session_id, "proj_other", "media");
    const cases: [string, string | undefined, number][] = [
      ["the client token", a.client_token, 4403],
      ["another session's session token", b.stream_metadata.session_token, 4403],
      ["an expired session token", expired.token, 4401],
      ["another project's token", otherProject.token, 4404],
      ["no token", undefined, 4403],
      ["a forged token", a.stream_metadata.session_token.slice(0, -3) + "abc", 4403],
    ];
    for (const [what, token, code] of cases) {
      const c = new SignalRecorder(url, token);
      await c.closed;
      assert.equal(c.closeCode, code, what);
      assert.deepEqual(c.messages, [], `${what}: nothing is sent`);
    }
    // The fMP4 socket does not serve a webrtc_sfu session, and a plain GET is not a WebSocket.
    const wsUrl = `${base.replace("http", "ws")}/media/v0/sessions/${a.session_id}`;
    const m = MediaClientRecorder.withToken(wsUrl, a.client_token);
    await m.closed;
    assert.equal(m.closeCode, 4404);
    const plain = await fetch(url.replace("ws", "http"));
    checkErrorBody({ status: plain.status, headers: plain.headers, body: await plain.json() }, {
      status: 400,
      code: "SVC_INVALID_REQUEST",
    });
    await ok.close();
  });
});

Deno.test("sfu: the session's mountpoint is private, exists while the session lives and is destroyed with it", async () => {
  await withSfu(async ({ h, key, create, janus, plane }) => {
    const before = await mountpoints(janus.url, janus.secret);
    const s = await create();
    const during = await mountpoints(janus.url, janus.secret);
    assert.equal(during.length, before.length + 1);
    const id = during.find((x) => !before.includes(x))!;
    // Someone who reached Janus's API (the worker's secret aside) cannot list it or watch it without the pin.
    const c = await JanusConnection.open(janus.url, janus.secret);
    try {
      const js = await c.createSession();
      const viewer = await js.attach("janus.plugin.streaming");
      const visible = await viewer.request({ request: "list" });
      assert.deepEqual(visible.list, [], "private: not listed");
      await assert.rejects(viewer.message({ request: "watch", id }), /pin|Unauthorized/i);
      await js.destroy();
    } finally {
      await c.close();
    }
    const end = await h.req("POST", `/v1/sessions/${s.session_id}/end`, { key });
    assert.equal(end.status, 200);
    assert.equal(end.body.status, "ended");
    assert.ok(end.body.chunks_rendered > 0, "frames were rendered and sent");
    assert.deepEqual(await mountpoints(janus.url, janus.secret), before);
    assert.equal(plane.active, 0, "the render slot is free");
  });
});

Deno.test("sfu: an unreachable SFU answers 503 SVC_SFU_CONNECTION_FAILED and frees the slot", async () => {
  const closedPort = freeTcpPort();
  await withSfu(async ({ post, plane, fake }) => {
    const res = await post();
    const body = checkErrorBody(res, { status: 503, code: "SVC_SFU_CONNECTION_FAILED", retryable: true });
    assert.ok(!/127\.0\.0\.1|ws:\/\//.test(String(body.message)), "no address in the message");
    assert.equal(plane.active, 0);
    assert.ok(fake.connections.every((c) => c.closed), "the engine connection was closed");
  }, { sfu: { janusUrl: `ws://127.0.0.1:${closedPort}` } });
});

Deno.test("sfu: Janus behind TLS with a private CA: trusted through SVC_SFU_CA_FILE a session runs over wss://; without it, 503 SVC_SFU_CONNECTION_FAILED", async () => {
  await withSfu(async ({ h, key, create, janus }) => {
    assert.match(janus.wssUrl!, /^wss:/);
    const before = await mountpoints(janus.url, janus.secret);
    const s = await create();
    // (its mountpoint was made over the TLS socket: the plane was given no other address)
    assert.equal((await mountpoints(janus.url, janus.secret)).length, before.length + 1);
    const end = await h.req("POST", `/v1/sessions/${s.session_id}/end`, { key });
    assert.equal(end.status, 200);
    assert.ok(end.body.chunks_rendered > 0, "frames were rendered and sent");
  }, { wss: "trusted" });
  // The same Janus certificate, its CA not named: the TLS handshake fails (over ws:// it would not).
  await withSfu(async ({ post, plane }) => {
    const res = await post();
    const body = checkErrorBody(res, { status: 503, code: "SVC_SFU_CONNECTION_FAILED", retryable: true });
    assert.ok(!/localhost|wss:\/\//.test(String(body.message)), "no address in the message");
    assert.equal(plane.active, 0);
  }, { wss: "untrusted" });
});

Deno.test("sfu: a mountpoint Janus refuses answers 502 SVC_SFU_NEGOTIATION_FAILED", async () => {
  await withSfu(async ({ post, plane }) => {
    const res = await post();
    checkErrorBody(res, { status: 502, code: "SVC_SFU_NEGOTIATION_FAILED", retryable: true });
    assert.equal(plane.active, 0, "the render slot is free");
  }, { sfu: { rtpHost: "192.0.2.254" } }); // an address Janus cannot bind its ingest to
});

Deno.test("sfu: no free SFU port answers 503 SVC_SFU_ROOM_FULL (retryable); an ended session makes room", async () => {
  await withSfu(async ({ h, key, create, post }) => {
    const first = await create();
    const res = await post();
    checkErrorBody(res, { status: 503, code: "SVC_SFU_ROOM_FULL", retryable: true });
    assert.equal((await h.req("POST", `/v1/sessions/${first.session_id}/end`, { key })).status, 200);
    const again = await create();
    assert.equal(again.transport, "webrtc_sfu");
    assert.equal((await h.req("POST", `/v1/sessions/${again.session_id}/end`, { key })).status, 200);
  }, { janus: { ingestPorts: 3 } }); // room for one mountpoint (video, audio, data)
});

Deno.test("sfu: Janus restarting mid-session: the session's objects are recreated and the client gets a new offer", async () => {
  await withSfu(async ({ h, key, create, janus }) => {
    const s = await create();
    const c = new SignalRecorder(s.stream_metadata.sfu_endpoint, s.stream_metadata.session_token);
    await until(() => c.of("offer").length === 1, 20_000, "the first offer");
    await janus.kill();
    await janus.restart();
    await until(() => c.of("offer").length === 2, 30_000, "a new offer after the restart");
    assert.equal((await mountpoints(janus.url, janus.secret)).length, 1, "the mountpoint exists again");
    const got = await h.req("GET", `/v1/sessions/${s.session_id}`, { key });
    assert.equal(got.body.status, "active");
    assert.equal((await h.req("POST", `/v1/sessions/${s.session_id}/end`, { key })).status, 200);
    await c.closed;
    assert.equal(c.closeCode, 1000);
  });
});

Deno.test("sfu: Janus gone for good ends the session ended_with_warnings with end_reason sfu_failed", async () => {
  await withSfu(async ({ h, key, create, janus, plane }) => {
    const s = await create();
    const c = new SignalRecorder(s.stream_metadata.sfu_endpoint, s.stream_metadata.session_token);
    await until(() => c.of("offer").length === 1, 20_000, "the offer");
    await janus.kill();
    await c.closed;
    assert.equal(c.closeCode, 1011);
    assert.equal(c.closeReason, "media_failed");
    assert.deepEqual(c.of("ended").map((m) => m.reason), ["sfu_unreachable"]);
    await until(
      async () => /^ended/.test((await getSession(h.kv, "proj_sfu", s.session_id))?.status ?? ""),
      20_000,
      "the session to end",
    );
    const got = await h.req("GET", `/v1/sessions/${s.session_id}`, { key });
    assert.equal(got.body.status, "ended_with_warnings");
    assert.equal(got.body.end_reason, "sfu_failed");
    const end = await h.req("POST", `/v1/sessions/${s.session_id}/end`, { key });
    assert.equal(end.status, 409);
    assert.equal(end.body.code, "SVC_SESSION_ENDED");
    await until(() => plane.active === 0, 10_000, "the render slot to be freed");
  }, { sfu: { recoveryTimeoutMs: 1500 } });
});

Deno.test("sfu: a session nobody subscribes to ends no_client_joined after the join window, like an fMP4 one", async () => {
  await withSfu(async ({ h, key, create, janus }) => {
    const s = await create();
    // A signalling socket alone is not a client: only a subscriber whose PeerConnection is up counts.
    const c = new SignalRecorder(s.stream_metadata.sfu_endpoint, s.stream_metadata.session_token);
    await until(() => c.of("offer").length === 1, 20_000, "the offer");
    assert.equal(h.runtime.clientCount(s.session_id), 0);
    await until(
      async () => /^ended/.test((await getSession(h.kv, "proj_sfu", s.session_id))?.status ?? ""),
      30_000,
      "the join window to pass",
    );
    const got = await h.req("GET", `/v1/sessions/${s.session_id}`, { key });
    assert.equal(got.body.end_reason, "no_client_joined");
    assert.equal(got.body.status, "ended");
    await c.closed;
    assert.equal(c.closeCode, 1000);
    assert.deepEqual(await mountpoints(janus.url, janus.secret), [], "its mountpoint is gone");
  }, { lifecycle: true, env: { SVC_SESSION_JOIN_WINDOW_S: "5" } });
});

Deno.test("sfu: a Janus that hangs (its socket open, nothing answering) is given up on: the session ends sfu_failed", async () => {
  await withSfu(async ({ h, create, janus }) => {
    const s = await create();
    const c = new SignalRecorder(s.stream_metadata.sfu_endpoint, s.stream_metadata.session_token);
    await until(() => c.of("offer").length === 1, 20_000, "the offer");
    Deno.kill(janus.pid, "SIGSTOP");
    try {
      await c.closed.then(() => {}, () => {});
      await until(
        async () => /^ended/.test((await getSession(h.kv, "proj_sfu", s.session_id))?.status ?? ""),
        30_000,
        "the session to end",
      );
      const rec = await getSession(h.kv, "proj_sfu", s.session_id);
      assert.equal(rec?.status, "ended_with_warnings");
      assert.equal(rec?.end_reason, "sfu_failed");
      assert.equal(c.closeCode, 1011);
    } finally {
      Deno.kill(janus.pid, "SIGCONT");
    }
  }, { sfu: { recoveryTimeoutMs: 1500 } });
});

Deno.test("sfu: a tool call reaches the client on its signalling socket; the client's tool_result answers it (signalling unaffected)", async () => {
  await withSfu(async ({ create, fake }) => {
    const s = await create();
    const c = new SignalRecorder(s.stream_metadata.sfu_endpoint, s.stream_metadata.session_token);
    await until(() => c.of("offer").length === 1, 20_000, "the subscriber offer");
    const results: ToolResult[] = [];
    const call = toolCall(
      { callId: "call_sfu_1", name: "get_weather", arguments: { city: "Lima" } },
      (r) => results.push(r),
    )!;
    fake.of(s.session_id).events.onToolCall(call);
    await until(() => c.of("tool_call").length === 1, 20_000, "tool_call");
    assert.deepEqual(c.of("tool_call")[0], {
      type: "tool_call",
      call_id: "call_sfu_1",
      name: "get_weather",
      arguments: { city: "Lima" },
    });
    c.ws.send(JSON.stringify({ type: "tool_result", call_id: "call_sfu_1", output: { temp_c: 18 } }));
    await until(() => results.length === 1, 20_000, "the result");
    assert.deepEqual(results, [{ output: { temp_c: 18 }, isError: false }]);
    // signalling still works on the same socket: an unknown type is ignored, nothing breaks
    c.ws.send(JSON.stringify({ type: "unpublish" }));
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(c.closeCode, null);
    await c.close();
  });
});

Deno.test("sfu: the players' messages go through the same dispatcher on the signalling socket: clock_sync is answered to its sender with the send lags, player_stats makes the session's figures", async () => {
  await withSfu(async ({ create, h, key }) => {
    const s = await create();
    const c = new SignalRecorder(s.stream_metadata.sfu_endpoint, s.stream_metadata.session_token);
    const other = new SignalRecorder(s.stream_metadata.sfu_endpoint, s.stream_metadata.session_token);
    await until(() => c.of("offer").length === 1 && other.of("offer").length === 1, 20_000, "the offers");
    c.ws.send(JSON.stringify({ type: "clock_sync", t: 42.5 }));
    await until(() => c.of("clock_sync").length === 1, 20_000, "the clock answer");
    const answer = c.of("clock_sync")[0];
    assert.equal(answer.t, 42.5);
    assert.ok(typeof answer.timeline_ms === "number" && answer.timeline_ms > 0, JSON.stringify(answer));
    assert.ok(
      answer.send_ms && "video" in answer.send_ms && "audio" in answer.send_ms,
      JSON.stringify(answer),
    );
    c.ws.send(JSON.stringify({ type: "player_stats", playback: "webrtc", first_frame_ms: 321 }));
    await until(
      async () => {
        await new Promise((r) => setTimeout(r, 100));
        return (await h.req("GET", `/v1/sessions/${s.session_id}/metrics`, { key })).body.first_frame_ms ===
          321;
      },
      20_000,
      "the report in the session's figures",
    );
    assert.equal(other.of("clock_sync").length, 0, "the answer went to its sender only");
    assert.equal(c.closeCode, null);
    await c.close();
    await other.close();
  });
});
