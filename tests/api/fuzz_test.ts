/**
 * A bounded run of the fuzz campaign (bench/fuzz_campaign.ts; `deno task fuzz` runs the full one) against a
 * real service on loopback: no unexpected 5xx, no malformed error body, no missing header, no abrupt
 * WebSocket close, no error log line, every method no route serves (any case) answered 405 or 404.
 */
import assert from "node:assert/strict";
import { runFuzz, startFuzzTarget } from "../../bench/fuzz_campaign.ts";

Deno.test("fuzz: 1,500 hostile requests and 40 forged-token WebSockets break no contract", async () => {
  const target = await startFuzzTarget();
  try {
    const report = await runFuzz(target, {
      count: 1500,
      websockets: 40,
      seconds: 240,
      concurrency: 8,
      seed: 8,
    });
    const detail = JSON.stringify(report, null, 1);
    assert.ok(report.requests >= 100, `only ${report.requests} requests ran: ${detail}`);
    assert.equal(report.unexpected_five_xx, 0, detail);
    assert.equal(report.malformed_error_bodies, 0, detail);
    assert.equal(report.bad_success_headers, 0, detail);
    assert.equal(report.transport_errors, 0, detail);
    assert.equal(report.websockets.unexpected, 0, detail);
    assert.equal(report.error_log_lines, 0, detail);
    assert.equal(report.bad_method_answers, 0, detail);
    // The campaign reached the interesting answers, not only 401s.
    for (const status of ["200", "400", "401", "403", "404", "405", "413"]) {
      assert.ok((report.by_status[status] ?? 0) > 0, `no ${status} answer: ${detail}`);
    }
  } finally {
    await target.close();
  }
});
