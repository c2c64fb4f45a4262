/**
 * The SDK's opt-in retry policy: what is retried (retryable codes always; network failures only where a
 * repeat is safe), how long it waits (retry_after, with jitter, never less), its bounds (attempts and total
 * time), and that a retried create never makes two sessions. Time is an injected clock: nothing sleeps.
 */
import assert from "node:assert/strict";
import { ApiError, type Client, createClient, type RetryEvent, type RetryOptions } from "../../sdk/mod.js";
import { DEFAULT_RETRY, resolveRetryPolicy, retryDelay, withRetry } from "../../sdk/retry.js";
import { createHarness, type Harness } from "../../testing/harness.ts";
import { startFakeEngine } from "../../testing/fake_engine.ts";
import { engineBody, testTls } from "../../testing/fixtures.ts";

/** A manual clock whose sleep advances it; every wait is recorded. */
function fakeTime(random = 0) {
  const state = { now: 1_000_000, waits: [] as number[], events: [] as RetryEvent[] };
  const options: RetryOptions = {
    now: () => state.now,
    sleep: (ms) => {
      state.waits.push(ms);
      state.now += ms;
      return Promise.resolve();
    },
    random: () => random,
    onRetry: (e) => state.events.push(e),
  };
  return { state, options };
}

/** An error answer of the service. */
function serviceError(status: number, code: string, retryAfter?: number): Response {
  const body: Record<string, unknown> = {
    code,
    message: "m",
    request_id: crypto.randomUUID(),
    doc_url: `https://svc.test/docs/errors#${code.toLowerCase()}`,
  };
  if (retryAfter !== undefined) body.retry_after = retryAfter;
  return Response.json(body, { status, headers: retryAfter ? { "retry-after": String(retryAfter) } : {} });
}

/** A client whose fetch plays `script` in order (then repeats its last entry); counts the calls. */
function scripted(script: (() => Response)[], retry: boolean | RetryOptions) {
  const seen: Request[] = [];
  const client = createClient({
    baseUrl: "http://svc.test",
    apiKey: "svc_sk_test",
    retry,
    fetch: (req) => {
      seen.push(req);
      const step = script[Math.min(seen.length - 1, script.length - 1)];
      return Promise.resolve(step());
    },
  });
  return { client, seen };
}

const networkDown = (): Response => {
  throw new TypeError("connection reset");
};
const SESSION = {
  session_id: "session:x",
  status: "active",
  provider_type: "vendor2",
  transport: "websocket_fmp4",
};

Deno.test("retry: off unless asked; true means the defaults; bad settings are TypeErrors", () => {
  assert.equal(resolveRetryPolicy(undefined), null);
  assert.equal(resolveRetryPolicy(false), null);
  const defaults = resolveRetryPolicy(true)!;
  assert.deepEqual(
    {
      maxAttempts: defaults.maxAttempts,
      maxElapsedMs: defaults.maxElapsedMs,
      jitter: defaults.jitter,
      retryNetworkErrors: defaults.retryNetworkErrors,
      networkBackoffMs: defaults.networkBackoffMs,
    },
    { ...DEFAULT_RETRY },
  );
  assert.equal(resolveRetryPolicy({ maxAttempts: 5 })!.maxAttempts, 5);
  for (const bad of [{ maxAttempts: 0 }, { maxAttempts: 1.5 }, { jitter: 2 }, { maxElapsedMs: -1 }]) {
    assert.throws(() => resolveRetryPolicy(bad), TypeError, JSON.stringify(bad));
  }
});

Deno.test("retry: without a policy a retryable error is thrown at once", async () => {
  const { client, seen } = scripted([() => serviceError(429, "SVC_RATE_LIMIT_EXCEEDED", 1)], false);
  await assert.rejects(client.getSession("session:x"), { code: "SVC_RATE_LIMIT_EXCEEDED" });
  assert.equal(seen.length, 1);
});

Deno.test("retry: a retryable code is retried after retry_after, stretched by jitter but never shortened", async () => {
  for (const [random, expected] of [[0, 2000], [0.5, 2200], [0.999, 2400]] as const) {
    const t = fakeTime(random);
    const { client, seen } = scripted(
      [() => serviceError(503, "SVC_SESSION_STATE_UNAVAILABLE", 2), () => Response.json(SESSION)],
      t.options,
    );
    const session = await client.getSession("session:x");
    assert.equal(session.session_id, "session:x");
    assert.equal(seen.length, 2);
    assert.equal(t.state.waits.length, 1);
    assert.ok(Math.abs(t.state.waits[0] - expected) <= 1, `random ${random}: waited ${t.state.waits[0]}`);
    assert.deepEqual(
      t.state.events.map((e) => [e.operation, e.attempt, e.delayMs, e.error.code]),
      [["getSession", 1, t.state.waits[0], "SVC_SESSION_STATE_UNAVAILABLE"]],
    );
  }
});

Deno.test("retry: non-retryable codes are never retried", async () => {
  for (
    const [status, code] of [
      [400, "SVC_INVALID_REQUEST"],
      [404, "SVC_SESSION_NOT_FOUND"],
      [
        409,
        "SVC_SESSION_ENDED",
      ],
      [500, "SVC_INTERNAL_ERROR"],
      [503, "SVC_SFU_NOT_CONFIGURED"],
    ] as const
  ) {
    const t = fakeTime();
    const { client, seen } = scripted(
      [() => serviceError(status, code), () => Response.json(SESSION)],
      t.options,
    );
    await assert.rejects(client.getSession("session:x"), { code });
    assert.equal(seen.length, 1, code);
    assert.deepEqual(t.state.waits, []);
  }
});

Deno.test("retry: attempts are bounded; the last error is thrown", async () => {
  const t = fakeTime();
  const { client, seen } = scripted([() => serviceError(429, "SVC_RATE_LIMIT_EXCEEDED", 1)], {
    ...t.options,
    maxAttempts: 4,
  });
  await assert.rejects(client.listApiKeys(), { code: "SVC_RATE_LIMIT_EXCEEDED" });
  assert.equal(seen.length, 4);
  assert.deepEqual(t.state.waits, [1000, 1000, 1000]);
});

Deno.test("retry: total time is bounded: no wait starts that would end past maxElapsedMs", async () => {
  const t = fakeTime();
  const { client, seen } = scripted([() => serviceError(503, "SVC_RENDER_CAPACITY", 4)], {
    ...t.options,
    maxAttempts: 10,
    maxElapsedMs: 10_000,
  });
  await assert.rejects(client.getSession("session:x"), { code: "SVC_RENDER_CAPACITY" });
  assert.deepEqual(t.state.waits, [4000, 4000], "a third wait would end at 12 s");
  assert.equal(seen.length, 3);
  // a retry_after longer than the whole budget is not waited for at all
  const long = fakeTime();
  const one = scripted([() => serviceError(429, "SVC_RATE_LIMIT_PROVIDER_QUOTA", 3600)], long.options);
  await assert.rejects(one.client.getSession("session:x"), { code: "SVC_RATE_LIMIT_PROVIDER_QUOTA" });
  assert.equal(one.seen.length, 1);
});

Deno.test("retry: network failures are retried with backoff only where a repeat is safe", async () => {
  const safe: [string, (c: Client) => Promise<unknown>][] = [
    ["getSession", (c) => c.getSession("session:x")],
    ["getSessionMetrics", (c) => c.getSessionMetrics("session:x")],
    ["listApiKeys", (c) => c.listApiKeys()],
    ["revokeApiKey", (c) => c.revokeApiKey("svc_key_x")],
    ["createClientToken", (c) => c.createClientToken("session:x")],
    ["createSession", (c) => c.createSession({ provider_type: "vendor2", provider_config: {} })],
    ["getWebhookSecret", (c) => c.getWebhookSecret()],
  ];
  for (const [name, call] of safe) {
    const t = fakeTime();
    const { client, seen } = scripted([networkDown], { ...t.options, maxAttempts: 4 });
    const err = (await call(client).catch((e) => e)) as ApiError;
    assert.equal(err.code, "SDK_NETWORK_ERROR", name);
    assert.equal(seen.length, 4, name);
    assert.deepEqual(t.state.waits, [500, 1000, 2000], `${name}: exponential backoff`);
  }
  const unsafe: [string, (c: Client) => Promise<unknown>][] = [
    ["createApiKey", (c) => c.createApiKey({ name: "x", scopes: ["sessions:read"] })],
    ["endSession", (c) => c.endSession("session:x")],
    ["rotateWebhookSecret", (c) => c.rotateWebhookSecret()],
  ];
  for (const [name, call] of unsafe) {
    const t = fakeTime();
    const { client, seen } = scripted([networkDown], { ...t.options, maxAttempts: 4 });
    await assert.rejects(call(client), { code: "SDK_NETWORK_ERROR" });
    assert.equal(seen.length, 1, `${name} is never repeated after an unknown outcome`);
  }
  // retryable codes are retried on unsafe operations too: the service did nothing
  const t = fakeTime();
  const created = {
    api_key: "svc_sk_new",
    created_at: 1,
    key_id: "svc_key_n",
    name: "x",
    scopes: ["sessions:read"],
  };
  const { client, seen } = scripted(
    [() => serviceError(429, "SVC_RATE_LIMIT_EXCEEDED", 1), () => Response.json(created)],
    t.options,
  );
  assert.equal((await client.createApiKey({ name: "x", scopes: ["sessions:read"] })).key_id, "svc_key_n");
  assert.equal(seen.length, 2);
  // and network retries can be switched off
  const off = fakeTime();
  const s2 = scripted([networkDown], { ...off.options, retryNetworkErrors: false });
  await assert.rejects(s2.client.getSession("session:x"), { code: "SDK_NETWORK_ERROR" });
  assert.equal(s2.seen.length, 1);
});

Deno.test("retry: a gateway answer without the service's error object counts as an unknown outcome", async () => {
  const t = fakeTime();
  const gateway = () => new Response("<html>502</html>", { status: 502, headers: { "retry-after": "3" } });
  const safe = scripted([gateway, () => Response.json(SESSION)], t.options);
  await safe.client.getSession("session:x");
  assert.deepEqual(t.state.waits, [3000], "its Retry-After header is honoured");
  const unsafe = scripted([gateway], fakeTime().options);
  await assert.rejects(unsafe.client.endSession("session:x"), { code: "SDK_INVALID_RESPONSE", status: 502 });
  assert.equal(unsafe.seen.length, 1);
  const notGateway = scripted([() => new Response("teapot", { status: 418 })], fakeTime().options);
  await assert.rejects(notGateway.client.getSession("session:x"), { code: "SDK_INVALID_RESPONSE" });
  assert.equal(notGateway.seen.length, 1);
});

Deno.test("retry: a per-call retry option overrides the client's", async () => {
  const t = fakeTime();
  const { client, seen } = scripted([() => serviceError(429, "SVC_RATE_LIMIT_EXCEEDED", 1)], t.options);
  await assert.rejects(client.getSession("session:x", { retry: false }), { code: "SVC_RATE_LIMIT_EXCEEDED" });
  assert.equal(seen.length, 1);
  const plain = scripted([
    () => serviceError(429, "SVC_RATE_LIMIT_EXCEEDED", 1),
    () => Response.json(SESSION),
  ], false);
  await plain.client.getSession("session:x", { retry: { ...fakeTime().options } });
  assert.equal(plain.seen.length, 2);
});

Deno.test("retry: an abort during a wait stops the retries with the signal's reason", async () => {
  const ac = new AbortController();
  let attempts = 0;
  const policy = resolveRetryPolicy({
    sleep: (_ms, signal) =>
      new Promise((_, reject) => {
        signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
        ac.abort(new Error("user cancelled"));
      }),
  });
  await assert.rejects(
    withRetry(policy, { operation: "t", safe: true }, () => {
      attempts++;
      return Promise.reject(
        new ApiError({
          code: "SVC_RATE_LIMIT_EXCEEDED",
          message: "m",
          status: 429,
          retryAfter: 1,
          retryable: true,
        }),
      );
    }, ac.signal),
    /user cancelled/,
  );
  assert.equal(attempts, 1);
  // the real sleep honours the signal too (no timer is left behind)
  const { sleep } = await import("../../sdk/retry.js");
  const stop = new AbortController();
  const waiting = sleep(60_000, stop.signal);
  stop.abort(new Error("stopped"));
  await assert.rejects(waiting, /stopped/);
});

Deno.test("retry: retryDelay is pure and follows the rules", () => {
  const policy = resolveRetryPolicy({
    random: () => 0.5,
    jitter: 0.2,
    maxAttempts: 3,
    maxElapsedMs: 10_000,
  })!;
  const retryable = new ApiError({
    code: "SVC_X",
    message: "m",
    status: 503,
    retryAfter: 2,
    retryable: true,
  });
  const net = new ApiError({ code: "SDK_NETWORK_ERROR", message: "m", status: 0 });
  assert.equal(retryDelay(policy, { operation: "o", safe: false }, retryable, 1, 0), 2200);
  assert.equal(retryDelay(policy, { operation: "o", safe: false }, retryable, 3, 0), null, "attempts spent");
  assert.equal(retryDelay(policy, { operation: "o", safe: false }, retryable, 1, 8000), null, "budget spent");
  assert.equal(retryDelay(policy, { operation: "o", safe: true }, net, 2, 0), 1100);
  assert.equal(retryDelay(policy, { operation: "o", safe: false }, net, 1, 0), null);
  assert.equal(retryDelay(policy, { operation: "o", safe: true }, new Error("not an ApiError"), 1, 0), null);
});

Deno.test("retry: the jitter stretches a wait by [0, jitter) of itself, never to its end, never below it", () => {
  const net = new ApiError({ code: "SDK_NETWORK_ERROR", message: "m", status: 0 });
  const at = (r: number, attempt: number) =>
    retryDelay(
      resolveRetryPolicy({ random: () => r, jitter: 0.2, maxAttempts: 5 })!,
      { operation: "o", safe: true },
      net,
      attempt,
      0,
    );
  // The largest draw below 1: rounding the whole product gave 600 and 1200 (the open end).
  const top = 1 - Number.EPSILON;
  assert.deepEqual([at(top, 1), at(top, 2), at(0.9976, 2)], [599, 1199, 1199]);
  assert.deepEqual([at(0, 1), at(0, 2)], [500, 1000], "a draw of 0: the wait itself");
  // A wait the service asked for in fractions of a second is never shortened.
  const asked = new ApiError({
    code: "SVC_X",
    message: "m",
    status: 503,
    retryAfter: 0.0015,
    retryable: true,
  });
  const policy = resolveRetryPolicy({ random: () => 0, jitter: 0.2, maxAttempts: 3 })!;
  assert.equal(retryDelay(policy, { operation: "o", safe: true }, asked, 1, 0), 1.5);
});

async function sessionCount(h: Harness, project: string): Promise<number> {
  let n = 0;
  for await (const _ of h.kv.list({ prefix: ["project", project, "session"] })) n++;
  return n;
}

Deno.test("retry: a create whose answer is lost is retried with the same Idempotency-Key: one session", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  const h = await createHarness({ caCerts: [testTls.caPem] });
  try {
    const key = await h.key("proj_r");
    const t = fakeTime();
    const seen: { key: string | null; replayed: string | null; status: number }[] = [];
    let dropped = false;
    const client = createClient({
      baseUrl: "http://svc.test",
      apiKey: key,
      retry: t.options,
      fetch: async (req) => {
        const res = await h.fetch(req);
        seen.push({
          key: req.headers.get("idempotency-key"),
          replayed: res.headers.get("idempotent-replayed"),
          status: res.status,
        });
        if (!dropped) {
          // The service created and started the session, but the answer never reaches the client.
          dropped = true;
          await res.body?.cancel();
          throw new TypeError("connection reset by peer");
        }
        return res;
      },
    });
    const session = await client.createSession(
      engineBody(engine.url) as Parameters<Client["createSession"]>[0],
    );
    assert.equal(session.status, "active");
    assert.equal(seen.length, 2);
    assert.equal(seen[0].key, seen[1].key, "both attempts carry the same Idempotency-Key");
    assert.deepEqual(seen.map((s) => [s.status, s.replayed]), [[200, null], [200, "true"]]);
    assert.equal(await sessionCount(h, "proj_r"), 1, "exactly one session exists");
    assert.equal(engine.upgrades.length, 1, "the engine was connected once");
    const live = await h.kv.get<number>(["project", "proj_r", "live_sessions"]);
    assert.equal(live.value, 1, "one concurrency slot taken");
    assert.equal(t.state.events.length, 1);
    assert.equal(t.state.events[0].error.code, "SDK_NETWORK_ERROR");
  } finally {
    await h.close();
    await engine.close();
  }
});

Deno.test("retry: a retryable failure of create is retried and starts the session once the engine is back", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  const h = await createHarness({ caCerts: [testTls.caPem] });
  try {
    const key = await h.key("proj_r2");
    const t = fakeTime();
    let calls = 0;
    const client = createClient({
      baseUrl: "http://svc.test",
      apiKey: key,
      retry: t.options,
      fetch: (req) => {
        calls++;
        // the first attempt meets a store outage (nothing is written), the second goes through
        return calls === 1
          ? Promise.resolve(serviceError(503, "SVC_SESSION_STATE_UNAVAILABLE", 2))
          : h.fetch(req);
      },
    });
    const session = await client.createSession(
      engineBody(engine.url) as Parameters<Client["createSession"]>[0],
    );
    assert.equal(session.status, "active");
    assert.equal(calls, 2);
    assert.deepEqual(t.state.waits, [2000]);
    assert.equal(await sessionCount(h, "proj_r2"), 1);
  } finally {
    await h.close();
    await engine.close();
  }
});
