/**
 * The real service process assembly: HTTP on loopback, a KV file, the embedded reference engine over
 * wss:// with its generated CA, and a key minted by the operators' CLI while the service runs.
 */
import assert from "node:assert/strict";
import { loadConfig } from "../../src/config.ts";
import { createLogger } from "../../src/log.ts";
import { compose as startService } from "../../src/app/compose.ts";
// The worker side, loaded with this module rather than by compose()'s `await import()` during a test: its
// lip-sync module opens libespeak-ng when first imported, which the resource sanitizer would count as the
// test's own.
import "../../src/app/worker_side.ts";

Deno.test("service: bootstrap with the CLI, then create, get and end a session on the reference engine", async () => {
  const dir = await Deno.makeTempDir();
  const logs: string[] = [];
  const config = loadConfig({
    PORT: "0",
    SVC_KV: `${dir}/svc.kv`,
    SVC_REFERENCE_ENGINE_PORT: "0",
    SVC_REFERENCE_ENGINE_DIR: `${dir}/engine`,
  });
  const service = await startService(config, { logger: createLogger({ sink: (l) => logs.push(l) }) });
  try {
    assert.ok(service.referenceEngine);
    const boot = await new Deno.Command(Deno.execPath(), {
      args: [
        "task",
        "--quiet",
        "cli",
        "admin",
        "bootstrap",
        "--project",
        "proj_e2e",
        "--name",
        "e2e",
        "--json",
      ],
      cwd: new URL("../..", import.meta.url),
      env: { SVC_KV: `${dir}/svc.kv` },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(boot.code, 0, new TextDecoder().decode(boot.stderr));
    const { api_key } = JSON.parse(new TextDecoder().decode(boot.stdout));

    const headers = { authorization: `Bearer ${api_key}`, "content-type": "application/json" };
    const res = await fetch(`${service.url}/v1/sessions`, {
      method: "POST",
      headers,
      body: JSON.stringify({
        provider_type: "external_engine",
        provider_config: {
          external_engine: {
            url: service.referenceEngine.url,
            auth_headers: { Authorization: `Bearer ${service.referenceEngine.token}` },
          },
        },
      }),
    });
    const created = await res.json();
    assert.equal(res.status, 200, JSON.stringify(created));
    assert.equal(created.status, "active");
    assert.equal(res.headers.get("x-request-id")?.length, 36);

    const got = await fetch(`${service.url}/v1/sessions/${created.session_id}`, {
      headers: { "x-api-key": api_key },
    });
    assert.equal((await got.json()).status, "active");

    // the wrong engine token is refused by the engine and mapped to 502
    const refused = await fetch(`${service.url}/v1/sessions`, {
      method: "POST",
      headers,
      body: JSON.stringify({
        provider_type: "external_engine",
        provider_config: {
          external_engine: {
            url: service.referenceEngine.url,
            auth_headers: { Authorization: "Bearer wrong" },
          },
        },
      }),
    });
    const refusedBody = await refused.json();
    assert.equal(refused.status, 502, JSON.stringify(refusedBody));
    assert.equal(refusedBody.code, "SVC_PROVIDER_DOWNSTREAM_FAILED");

    const ended = await fetch(`${service.url}/v1/sessions/${created.session_id}/end`, {
      method: "POST",
      headers,
    });
    const endBody = await ended.json();
    assert.equal(ended.status, 200, JSON.stringify(endBody));
    assert.equal(endBody.status, "ended");
    assert.ok(endBody.duration_s > 0);
    assert.ok(!logs.join("\n").includes(service.referenceEngine.token), "the engine token is never logged");
    assert.ok(!logs.join("\n").includes(api_key));
  } finally {
    await service.close();
    await Deno.remove(dir, { recursive: true });
  }
});
