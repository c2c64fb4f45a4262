/**
 * Tool calls, end to end: each engine's call (vendor1 function call, vendor2 and vendor3 `client_tool_call`,
 * V0 `tool_call`) reaches the session's media client as the fixed message
 * `{"type":"tool_call","call_id","name","arguments"}`; the client's `{"type":"tool_result","call_id",
 * "output","is_error"?}` goes back to the engine in its own format (the fakes record it as the vendor would
 * receive it); no client → an error result at once; no answer → an error result after 10 s. Plus the units:
 * the client-message dispatcher and the tool-call broker on a clock moved by hand.
 */
import assert from "node:assert/strict";
import { ClientMessages, MAX_CLIENT_MESSAGE_CHARS } from "../../src/media/client_messages.ts";
import { ToolCalls } from "../../src/media/tool_calls.ts";
import { TOOL_CALL_TIMEOUT_MS, TOOL_ERRORS, toolCall } from "../../src/providers/tool_calls.ts";
import type { ToolResult } from "../../src/providers/types.ts";
import { startVendor1Fake } from "../../testing/fakes/vendor1_realtime.ts";
import { startVendor2Fake } from "../../testing/fakes/vendor2.ts";
import { startVendor3Fake } from "../../testing/fakes/vendor3.ts";
import { until } from "../../testing/fakes/server.ts";
import { startFakeEngine } from "../../testing/fake_engine.ts";
import { engineBody } from "../../testing/fixtures.ts";
import { ManualClock } from "../../testing/manual_clock.ts";
import { MediaClientRecorder } from "../../testing/media.ts";
import { testTls, toneChunks, type VendorContext, withVendors } from "./_helpers.ts";
import { startReferenceEngine } from "../../engine/mod.ts";
import { FakeTts } from "../engine/_helpers.ts";

// ---------------------------------------------------------------------------------------------- units

Deno.test("client messages: one handler per type; unknown types are left to the socket; junk and oversize are invalid; a handler answers its sender", () => {
  const m = new ClientMessages();
  const got: unknown[] = [];
  const replies: string[] = [];
  const from = { reply: (t: string) => replies.push(t) };
  const off = m.on("tool_result", (msg) => got.push(msg));
  assert.throws(() => m.on("tool_result", () => {}), /registered already/);
  assert.equal(m.dispatch('{"type":"tool_result","call_id":"c1","output":1}', from), "handled");
  assert.deepEqual(got, [{ type: "tool_result", call_id: "c1", output: 1 }]);
  assert.equal(m.dispatch('{"type":"answer","sdp":"v=0"}', from), "unhandled");
  for (const junk of ["nope", "[1]", "null", '{"type":1}', "{}"]) {
    assert.equal(m.dispatch(junk, from), "invalid", junk);
  }
  const big = JSON.stringify({ type: "tool_result", output: "x".repeat(MAX_CLIENT_MESSAGE_CHARS) });
  assert.equal(m.dispatch(big, from), "invalid");
  m.on("boom", () => {
    throw new Error("handler bug");
  });
  assert.equal(m.dispatch('{"type":"boom"}', from), "handled", "a throwing handler is contained");
  m.on("ping", (_msg, sender) => sender.reply("pong"), { maxChars: 32 });
  assert.equal(m.dispatch('{"type":"ping"}', from), "handled");
  assert.deepEqual(replies, ["pong"]);
  assert.equal(
    m.dispatch(JSON.stringify({ type: "ping", pad: "x".repeat(40) }), from),
    "invalid",
    "its own bound",
  );
  off();
  assert.equal(m.dispatch('{"type":"tool_result"}', from), "unhandled");
});

function recordedCall(callId = "call_1") {
  const results: ToolResult[] = [];
  const call = toolCall(
    { callId, name: "get_weather", arguments: { city: "Paris" } },
    (r) => results.push(r),
  )!;
  return { call, results };
}

Deno.test("tool calls: to every client; the first answer wins; unknown ids and malformed answers are ignored", async () => {
  const clock = new ManualClock(0);
  const delivered: unknown[] = [];
  const calls = new ToolCalls({ clock, deliver: (m) => (delivered.push(m), 2) });
  const { call, results } = recordedCall();
  calls.call(call);
  assert.deepEqual(delivered, [{
    type: "tool_call",
    call_id: "call_1",
    name: "get_weather",
    arguments: { city: "Paris" },
  }]);
  assert.equal(calls.result({ type: "tool_result", call_id: "other", output: 1 }), false);
  assert.equal(calls.result({ type: "tool_result", call_id: "call_1", is_error: "yes" }), false);
  assert.equal(calls.result({ type: "tool_result", call_id: 7 }), false);
  assert.equal(calls.result({ type: "tool_result", call_id: "call_1", output: { temp: 21 } }), true);
  assert.equal(calls.result({ type: "tool_result", call_id: "call_1", output: "late" }), false);
  await clock.advance(TOOL_CALL_TIMEOUT_MS * 2);
  assert.deepEqual(results, [{ output: { temp: 21 }, isError: false }], "answered once, no timeout after");
  const second = recordedCall("call_2");
  calls.call(second.call);
  calls.result({ type: "tool_result", call_id: "call_2", is_error: true });
  assert.deepEqual(second.results, [{ output: null, isError: true }], "no output: null");
});

Deno.test("tool calls: no client connected → an error result at once; no answer → an error result at exactly 10 s", async () => {
  const clock = new ManualClock(0);
  let clients = 0;
  const calls = new ToolCalls({ clock, deliver: () => clients });
  const none = recordedCall("a");
  calls.call(none.call);
  assert.deepEqual(none.results, [{ output: TOOL_ERRORS.noClient, isError: true }]);
  clients = 1;
  const slow = recordedCall("b");
  calls.call(slow.call);
  await clock.advanceTo(TOOL_CALL_TIMEOUT_MS - 1);
  assert.deepEqual(slow.results, [], "still waiting at 9.999 s");
  await clock.advanceTo(TOOL_CALL_TIMEOUT_MS);
  assert.deepEqual(slow.results, [{ output: TOOL_ERRORS.timeout, isError: true }]);
  assert.equal(calls.result({ type: "tool_result", call_id: "b", output: "too late" }), false);
  assert.equal(calls.open, 0);
});

Deno.test("tool calls: the session's end answers every open call with an error, and later calls at once", async () => {
  const clock = new ManualClock(0);
  const calls = new ToolCalls({ clock, deliver: () => 1 });
  const open = recordedCall("a");
  calls.call(open.call);
  calls.close();
  assert.deepEqual(open.results, [{ output: TOOL_ERRORS.ended, isError: true }]);
  const later = recordedCall("b");
  calls.call(later.call);
  assert.deepEqual(later.results, [{ output: TOOL_ERRORS.ended, isError: true }]);
  await clock.advance(TOOL_CALL_TIMEOUT_MS * 2);
  assert.equal(open.results.length, 1);
});

// ---------------------------------------------------------------------------------------------- vendors

/** A media client of a new session, once the stream flows. */
async function client(ctx: VendorContext, body: unknown): Promise<MediaClientRecorder> {
  const res = await ctx.create(body);
  assert.equal(res.status, 200, res.text);
  const c = MediaClientRecorder.withToken(ctx.wsUrl(res.body.session_id), res.body.client_token);
  await c.until(() => c.segments().length > 0, 20_000, "stream");
  return c;
}

/** Waits for the client's tool_call of `name`, checks its exact shape, returns its call id. */
async function toolCallOf(
  c: MediaClientRecorder,
  name: string,
  args: Record<string, unknown>,
): Promise<string> {
  await c.until(() => c.texts.some((t) => t.type === "tool_call" && t.name === name), 20_000, "tool_call");
  const msg = c.texts.find((t) => t.type === "tool_call" && t.name === name);
  assert.deepEqual(Object.keys(msg).sort(), ["arguments", "call_id", "name", "type"]);
  assert.equal(typeof msg.call_id, "string");
  assert.deepEqual(msg.arguments, args);
  return msg.call_id;
}

const answer = (c: MediaClientRecorder, callId: string, output: unknown, isError?: boolean) =>
  c.ws.send(
    JSON.stringify({ type: "tool_result", call_id: callId, output, ...(isError ? { is_error: true } : {}) }),
  );

const SECRET = `ek_test_${crypto.randomUUID().replaceAll("-", "")}`;
const v1Body = {
  provider_type: "vendor1_realtime",
  provider_config: { vendor1_realtime: { client_secret: SECRET } },
};

Deno.test("tool calls vendor1: a function call reaches the client; its result goes back as function_call_output, then response.create once the response is done", async () => {
  const fake = startVendor1Fake(testTls, { secret: SECRET });
  try {
    await withVendors({ SVC_VENDOR1_REALTIME_URL: fake.url }, async (ctx) => {
      const c = await client(ctx, v1Body);
      const call = fake.call();
      // The response carrying the call is still running when the client answers.
      const vendorId = call.callFunction("get_weather", { city: "Paris" }, { done: false });
      const callId = await toolCallOf(c, "get_weather", { city: "Paris" });
      assert.equal(callId, vendorId, "the vendor's call_id");
      answer(c, callId, { temperature_c: 21 });
      await until(() => call.functionOutputs.has(vendorId), 20_000, "function_call_output");
      assert.equal(call.functionOutputs.get(vendorId), '{"temperature_c":21}');
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(call.responseCreates, 0, "no response.create while the response runs");
      call.responseDone(call.inFlight!);
      await until(() => call.responseCreates === 1, 20_000, "response.create after response.done");
      // An error result, answered after the response is done: at once.
      const second = call.callFunction("book", { slot: 3 });
      const callId2 = await toolCallOf(c, "book", { slot: 3 });
      answer(c, callId2, "slot taken", true);
      await until(() => call.responseCreates === 2, 20_000, "response.create");
      assert.equal(call.functionOutputs.get(second), JSON.stringify({ error: "slot taken" }));
      assert.deepEqual(call.clientErrors, [], "no response.create collided with a running response");
      assert.equal(c.texts.filter((t) => t.type === "tool_call").length, 2, "each call announced once");
      await c.close();
    }, { media: true });
  } finally {
    await fake.close();
  }
});

Deno.test("tool calls vendor1: no client connected → the vendor gets an error result at once", async () => {
  const fake = startVendor1Fake(testTls, { secret: SECRET });
  try {
    await withVendors({ SVC_VENDOR1_REALTIME_URL: fake.url }, async (ctx) => {
      assert.equal((await ctx.create(v1Body)).status, 200);
      const call = fake.call();
      const id = call.callFunction("get_weather", { city: "Oslo" });
      await until(() => call.functionOutputs.has(id), 20_000, "an error result");
      assert.equal(call.functionOutputs.get(id), JSON.stringify({ error: TOOL_ERRORS.noClient }));
      await until(() => call.responseCreates === 1, 20_000, "the agent goes on");
    }, { media: true });
  } finally {
    await fake.close();
  }
});

const TOKEN = `tok_${crypto.randomUUID().replaceAll("-", "")}`;
const AGENT = "agent_tools_01";
const v2Body = {
  provider_type: "vendor2",
  provider_config: { vendor2: { access_token: TOKEN, agent_id: AGENT } },
};

Deno.test("tool calls vendor2: client_tool_call reaches the client; its result goes back as client_tool_result; expects_response false sends nothing back", async () => {
  const fake = startVendor2Fake(testTls, { token: TOKEN, agents: [AGENT] });
  try {
    await withVendors({ SVC_VENDOR2_URL: fake.url }, async (ctx) => {
      const c = await client(ctx, v2Body);
      const call = fake.call();
      const id = call.callTool("open_cart", { cart_id: "cart_456" });
      assert.equal(await toolCallOf(c, "open_cart", { cart_id: "cart_456" }), id);
      answer(c, id, "2 items in cart");
      await until(() => call.toolResults.length === 1, 20_000, "client_tool_result");
      assert.deepEqual(call.toolResults[0], {
        type: "client_tool_result",
        tool_call_id: id,
        result: "2 items in cart",
        is_error: false,
      });
      const fire = call.callTool("show_banner", { text: "hi" }, false);
      await toolCallOf(c, "show_banner", { text: "hi" });
      answer(c, fire, { shown: true });
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(call.toolResults.length, 1, "a tool without expects_response gets no result");
      await c.close();
    }, { media: true });
  } finally {
    await fake.close();
  }
});

Deno.test("tool calls vendor2: a client that never answers → client_tool_result is_error after 10 s, and the session goes on", async () => {
  const fake = startVendor2Fake(testTls, { token: TOKEN, agents: [AGENT] });
  try {
    await withVendors({ SVC_VENDOR2_URL: fake.url }, async (ctx) => {
      const c = await client(ctx, v2Body);
      const call = fake.call();
      const sent = Date.now();
      const id = call.callTool("slow_tool", {});
      await toolCallOf(c, "slow_tool", {});
      await until(() => call.toolResults.length === 1, 30_000, "the timeout's error result");
      const waited = Date.now() - sent;
      assert.ok(waited >= TOOL_CALL_TIMEOUT_MS - 50, `answered after ${waited} ms, not before 10 s`);
      assert.deepEqual(call.toolResults[0], {
        type: "client_tool_result",
        tool_call_id: id,
        result: TOOL_ERRORS.timeout,
        is_error: true,
      });
      answer(c, id, "too late");
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(call.toolResults.length, 1, "a late answer is dropped");
      assert.ok(call.ws.open, "the call goes on");
      await c.close();
    }, { media: true });
  } finally {
    await fake.close();
  }
});

const V3_AGENT = "agent_tools_03";

Deno.test("tool calls vendor3: client_tool_call reaches the client; its result (JSON as text) goes back as client_tool_result; no client → an error at once", async () => {
  const fake = startVendor3Fake(testTls, { publicAgents: [V3_AGENT], privateAgents: [], apiKey: "xi_x" });
  const body = { provider_type: "vendor3", provider_config: { vendor3: { agent_id: V3_AGENT } } };
  try {
    await withVendors({ SVC_VENDOR3_URL: fake.url }, async (ctx) => {
      const c = await client(ctx, body);
      const conversation = fake.conversation();
      const id = conversation.callTool("lookup_order", { order: 1234 });
      assert.equal(await toolCallOf(c, "lookup_order", { order: 1234 }), id);
      answer(c, id, { status: "shipped" });
      await until(() => conversation.toolResults.length === 1, 20_000, "client_tool_result");
      assert.deepEqual(conversation.toolResults[0], {
        type: "client_tool_result",
        tool_call_id: id,
        result: '{"status":"shipped"}',
        is_error: false,
      });
      await c.close();
      // the only client left: the next call is answered with an error at once
      await until(() =>
        ctx.plane!.get(ctx.h.runtime.liveSessions()[0].sessionId)!.media.stats().clients === 0
      );
      const lone = conversation.callTool("lookup_order", { order: 5 });
      await until(() => conversation.toolResults.length === 2, 20_000, "an error result");
      assert.deepEqual(conversation.toolResults[1], {
        type: "client_tool_result",
        tool_call_id: lone,
        result: TOOL_ERRORS.noClient,
        is_error: true,
      });
    }, { media: true });
  } finally {
    await fake.close();
  }
});

Deno.test("tool calls external_engine (V0): tool_call reaches the client; tool_result goes back with its JSON output as is", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  try {
    await withVendors({}, async (ctx) => {
      const c = await client(ctx, engineBody(engine.url));
      engine.sendAll({ type: "tool_call", call_id: "c_42", name: "get_time", arguments: { tz: "UTC" } });
      assert.equal(await toolCallOf(c, "get_time", { tz: "UTC" }), "c_42");
      answer(c, "c_42", { iso: "2026-11-26T10:00:00Z" });
      await until(() => engine.messages.some((m) => m.type === "tool_result"), 20_000, "tool_result");
      assert.deepEqual(engine.messages.find((m) => m.type === "tool_result"), {
        type: "tool_result",
        call_id: "c_42",
        output: { iso: "2026-11-26T10:00:00Z" },
        is_error: false,
      });
      // a malformed call is answered with an error at once and never reaches the client
      engine.sendAll({ type: "tool_call", call_id: "c_bad", name: "x", arguments: [1] });
      await until(() => engine.messages.some((m) => m.call_id === "c_bad"), 20_000, "the error result");
      assert.equal(engine.messages.find((m) => m.call_id === "c_bad")!.is_error, true);
      assert.ok(!c.texts.some((t) => t.call_id === "c_bad"));
      await c.close();
    }, { media: true });
  } finally {
    await engine.close();
  }
});

Deno.test("tool calls end to end with the reference engine's demo tool: the user speaks, the engine calls the page's tool, the page answers, the avatar says the answer", async () => {
  const engine = await startReferenceEngine({
    tls: { certPem: testTls.certPem, keyPem: testTls.keyPem },
    authToken: "demo-token-0123456789",
    greeting: null,
    tts: new FakeTts(300),
    demoTool: "get_local_time",
  });
  try {
    await withVendors({}, async (ctx) => {
      const c = await client(ctx, engineBody(engine.url, {}, "demo-token-0123456789"));
      // The user speaks for 0.4 s (24 kHz microphone frames of 20 ms), then is silent.
      const speech = toneChunks(20, 20, 24000, 200, 8000);
      const quiet = Array.from({ length: 50 }, () => new Int16Array(480));
      for (const frame of [...quiet.slice(0, 5), ...speech, ...quiet]) {
        c.ws.send(new Uint8Array(frame.buffer));
        await new Promise((r) => setTimeout(r, 20));
      }
      const callId = await toolCallOf(c, "get_local_time", { turn_id: "u_1", speech_ms: 400 });
      answer(c, callId, "ten forty-two");
      await c.until(
        () =>
          c.texts.some((t) =>
            t.type === "transcript" && t.role === "agent" && /answered: ten forty-two/.test(t.text)
          ),
        30_000,
        "the agent saying the tool's answer",
      );
      await c.close();
    }, { media: true });
  } finally {
    await engine.close();
  }
});
