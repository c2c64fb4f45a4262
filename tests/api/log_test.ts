import assert from "node:assert/strict";
import { batchedStdoutSink, createLogger } from "../../src/log.ts";

Deno.test("log: one JSON object per line, {ts, level, msg, ...fields}, undefined fields left out", () => {
  const lines: string[] = [];
  const log = createLogger({ level: "info", sink: (l) => lines.push(l), now: () => 0 });
  log.info("request", { method: "GET", status: 200, project_id: undefined });
  log.debug("dropped");
  log.warn("no fields");
  log.error("odd", { msg: "field wins", level: "x" });
  log.info("empty", {});
  assert.deepEqual(lines.map((l) => JSON.parse(l)), [
    { ts: "1970-01-01T00:00:00.000Z", level: "info", msg: "request", method: "GET", status: 200 },
    { ts: "1970-01-01T00:00:00.000Z", level: "warn", msg: "no fields" },
    { ts: "1970-01-01T00:00:00.000Z", level: "x", msg: "field wins" },
    { ts: "1970-01-01T00:00:00.000Z", level: "info", msg: "empty" },
  ]);
});

Deno.test("log: the batched sink writes info lines together, and at once with a warn or an error", async () => {
  const writes: string[] = [];
  const sink = batchedStdoutSink({ flushMs: 10, write: (b) => writes.push(new TextDecoder().decode(b)) });
  const log = createLogger({ level: "info", sink });
  log.info("a");
  log.info("b");
  assert.equal(writes.length, 0, "buffered");
  log.warn("c");
  assert.equal(writes.length, 1, "a warn writes what is pending with it");
  assert.deepEqual(writes[0].trim().split("\n").map((l) => JSON.parse(l).msg), ["a", "b", "c"]);
  log.info("d");
  const deadline = Date.now() + 20_000;
  while (writes.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  assert.equal(JSON.parse(writes[1]).msg, "d", "written by the timer");
  sink.flush!();
});
