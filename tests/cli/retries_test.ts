/**
 * `--retries`: with it the CLI waits `retry_after` and retries a rate-limited call, saying so on stderr;
 * without it the retryable error is reported at once with its retry_after.
 */
import assert from "node:assert/strict";
import { runCli } from "../../testing/cli.ts";
import { startTestService } from "../../testing/service.ts";

Deno.test("cli --retries: a rate-limited call is retried after retry_after; without it, exit 1", async () => {
  // 4 requests a minute, no burst to speak of: one request every 15 s, so a CLI started right after the
  // allowance is spent meets a 429 first, even when a busy machine takes seconds to start it
  const svc = await startTestService({ SVC_RATE_LIMIT_PER_MINUTE: "4", SVC_RATE_LIMIT_BURST: "1" });
  try {
    const key = await svc.key("proj_retry");
    const env = { SVC_API_URL: svc.url, SVC_API_KEY: key };
    const spend = async () => {
      let limited = false;
      for (let i = 0; i < 5 && !limited; i++) {
        const res = await fetch(`${svc.url}/v1/api-keys`, { headers: { "x-api-key": key } });
        await res.body?.cancel();
        limited = res.status === 429;
      }
      assert.ok(limited);
    };
    await spend();
    const once = await runCli(["keys", "list", "--json"], { env });
    assert.equal(once.code, 1);
    assert.match(once.stderr, /^error: SVC_RATE_LIMIT_EXCEEDED: /m);
    assert.match(once.stderr, /^ {2}retry_after: ([1-9]|1[0-5]) s$/m);

    await spend();
    const retried = await runCli(["keys", "list", "--json", "--retries", "3"], { env });
    assert.equal(retried.code, 0, retried.stderr);
    assert.match(retried.stderr, /^Retrying in \d+\.\d s after SVC_RATE_LIMIT_EXCEEDED \(attempt 2 of 4\)$/m);
    assert.equal(JSON.parse(retried.stdout).data.length, 1, "stdout holds only the JSON answer");
  } finally {
    await svc.close();
  }
});
