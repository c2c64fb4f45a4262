/**
 * The access log: a summary line per window at `info`, a line of its own for a failed (5xx) or slow
 * request, a line per request at `debug`; never headers or bodies.
 */
import assert from "node:assert/strict";
import { Hono } from "hono";
import { requestContext } from "../../src/api/middleware/request_context.ts";
import type { AppEnv } from "../../src/api/app_env.ts";
import { createLogger, type LogLevel } from "../../src/log.ts";

function app(level: LogLevel) {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ level, sink: (l) => lines.push(JSON.parse(l)) });
  let t = 0;
  const h = new Hono<AppEnv>();
  h.use("*", requestContext(logger, { summaryMs: 10_000, now: () => t }));
  h.get("/ok", (c) => c.json({ ok: true }));
  h.get("/missing", (c) => c.json({ code: "x" }, 404));
  h.get("/broken", (c) => c.json({ code: "y" }, 500));
  h.get("/slow", (c) => {
    t += 1_500;
    return c.json({ ok: true });
  });
  const get = async (path: string) => {
    const res = await h.request(path, { headers: { authorization: "Bearer secret-value" } });
    await res.body?.cancel();
    assert.match(res.headers.get("x-request-id") ?? "", /^[0-9a-f-]{36}$/);
    return res.status;
  };
  return { lines, get, advance: (ms: number) => (t += ms) };
}

Deno.test("access log at info: requests that went well are counted, not logged one by one; 5xx and slow ones are", async () => {
  const a = app("info");
  for (let i = 0; i < 3; i++) assert.equal(await a.get("/ok"), 200);
  assert.equal(await a.get("/missing"), 404);
  assert.equal(a.lines.length, 0, "nothing per request");
  assert.equal(await a.get("/broken"), 500);
  assert.equal(await a.get("/slow"), 200);
  const single = a.lines.filter((l) => l.msg === "request");
  assert.deepEqual(single.map((l) => [l.level, l.path, l.status]), [["warn", "/broken", 500], [
    "info",
    "/slow",
    200,
  ]]);
  assert.equal(single[1].ms, 1500);
  a.advance(10_000);
  assert.equal(await a.get("/ok"), 200); // the first request after the window writes its summary
  const summary = a.lines.filter((l) => l.msg === "requests");
  assert.equal(summary.length, 1);
  assert.equal(summary[0].level, "info");
  assert.equal(summary[0].count, 6);
  assert.deepEqual([summary[0]["2xx"], summary[0]["4xx"], summary[0]["5xx"]], [4, 1, 1]);
  assert.equal(summary[0].max_ms, 1500);
  assert.equal(summary[0].mean_ms, 250);
  assert.ok(!JSON.stringify(a.lines).includes("secret-value"), "no header reaches the log");
});

Deno.test("access log at debug: a line for every request", async () => {
  const a = app("debug");
  await a.get("/ok");
  await a.get("/missing");
  assert.deepEqual(
    a.lines.filter((l) => l.msg === "request").map((l) => [l.level, l.method, l.path, l.status]),
    [["debug", "GET", "/ok", 200], ["debug", "GET", "/missing", 404]],
  );
});

Deno.test("access log at warn: only the failed requests", async () => {
  const a = app("warn");
  await a.get("/ok");
  await a.get("/slow");
  await a.get("/broken");
  a.advance(20_000);
  await a.get("/ok");
  assert.deepEqual(a.lines.map((l) => [l.level, l.msg, l.status]), [["warn", "request", 500]]);
});
