/**
 * The media plane's failure rules: an encoder dying mid-session, capacity, the first-frame deadline, an
 * encoder that cannot start, and start-up without ffmpeg.
 */
import assert from "node:assert/strict";
import type { Renderer } from "../../src/media/renderer.ts";
import { getSession } from "../../src/kv/sessions.ts";
import { checkErrorBody, engineBody } from "../../testing/fixtures.ts";
import { DEADLINE_MS } from "../../testing/deadline.ts";
import { MediaClientRecorder, processAlive, smallRenderer, until, withMedia } from "../../testing/media.ts";

Deno.test("media failure: ffmpeg killed mid-session ends it with a warning, closes clients 1011, leaves no process", async () => {
  await withMedia(async ({ h, key, create, wsUrl, encoders, fake, plane }) => {
    const s = await create();
    const c = MediaClientRecorder.withToken(wsUrl(s.session_id), s.client_token);
    await c.until(() => c.segments().length > 5, DEADLINE_MS, "stream");
    // The start's encoder has stopped (no video client then); the video client's runs. The audio is
    // encoded in process.
    const pids = encoders.filter((e) => e.sessionId === s.session_id).map((e) => e.pid).filter(processAlive);
    assert.equal(pids.length, 1, "one video encoder runs");
    Deno.kill(pids[0], "SIGKILL");
    await until(
      async () => {
        const got = await h.req("GET", `/v1/sessions/${s.session_id}`, { key });
        return got.body.status !== "active";
      },
      DEADLINE_MS,
      "the session to end",
    );
    const got = await h.req("GET", `/v1/sessions/${s.session_id}`, { key });
    assert.equal(got.body.status, "ended_with_warnings");
    await c.closed;
    assert.equal(c.closeCode, 1011);
    assert.equal(c.closeReason, "media_failed");
    assert.ok(fake.of(s.session_id).closed, "the engine connection was closed");
    await until(() => pids.every((p) => !processAlive(p)), DEADLINE_MS, "both encoders gone");
    assert.equal(plane.active, 0, "the render slot is free again");
    assert.ok(!h.runtime.has(s.session_id));
    const end = await h.req("POST", `/v1/sessions/${s.session_id}/end`, { key });
    checkErrorBody(end, { status: 409, code: "SVC_SESSION_ENDED" });
    // the record keeps the provider-agnostic warning
    const rec = await getSession(h.kv, "proj_media", s.session_id);
    assert.equal(rec?.warning, "The avatar media plane failed.");
    assert.equal(rec?.end_reason, "render_failed");
  });
});

Deno.test("media failure: render capacity answers 503 SVC_RENDER_CAPACITY until a slot frees", async () => {
  await withMedia(async ({ h, key, create, plane }) => {
    const first = await create();
    assert.equal(plane.active, 1);
    const refused = await h.req("POST", "/v1/sessions", { key, body: engineBody("wss://engine.test/v0") });
    checkErrorBody(refused, { status: 503, code: "SVC_RENDER_CAPACITY", retryable: true });
    const end = await h.req("POST", `/v1/sessions/${first.session_id}/end`, { key });
    assert.equal(end.status, 200);
    assert.equal(plane.active, 0);
    const again = await create();
    assert.equal(again.status, "active");
  }, { media: { capacity: 1 } });
});

Deno.test("media failure: no first frame in time answers 504 SVC_RENDER_TIMEOUT and stops the encoders", async () => {
  const real = await smallRenderer();
  const stuck: Renderer = {
    format: real.format,
    open: () => ({ renderFrame: () => new Promise<Uint8Array>(() => {}), close: () => {} }),
  };
  await withMedia(async ({ h, key, encoders, plane }) => {
    const res = await h.req("POST", "/v1/sessions", { key, body: engineBody("wss://engine.test/v0") });
    checkErrorBody(res, { status: 504, code: "SVC_RENDER_TIMEOUT", retryable: true });
    assert.equal(encoders.length, 1, "the video encoder (the audio is encoded in process)");
    await until(() => encoders.every((e) => !processAlive(e.pid)), DEADLINE_MS, "encoders gone");
    assert.equal(plane.active, 0);
    assert.equal(h.runtime.size, 0);
  }, { media: { firstFrameTimeoutMs: 500 }, plane: { renderer: stuck } });
});

Deno.test("media failure: an encoder that cannot start answers 502 SVC_RENDER_FAILED", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // passes the start-up check, then fails like a broken build would
    const fake = `${dir}/ffmpeg`;
    await Deno.writeTextFile(
      fake,
      `#!/bin/sh\ncase "$*" in *-encoders*|*-version*) exec ffmpeg "$@";; esac\necho "broken" >&2\nexit 3\n`,
    );
    await Deno.chmod(fake, 0o755);
    await withMedia(async ({ h, key, plane }) => {
      const res = await h.req("POST", "/v1/sessions", { key, body: engineBody("wss://engine.test/v0") });
      checkErrorBody(res, { status: 502, code: "SVC_RENDER_FAILED" });
      assert.equal(plane.active, 0);
      assert.equal(h.runtime.size, 0);
    }, { media: { ffmpegPath: fake } });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("media failure: start-up without ffmpeg exits 1 with one line", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "main.ts"],
      cwd: new URL("../..", import.meta.url),
      env: {
        PORT: "0",
        SVC_KV: `${dir}/svc.kv`,
        SVC_REFERENCE_ENGINE: "false",
        SVC_FFMPEG_PATH: `${dir}/no-such-ffmpeg`,
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 1);
    const err = new TextDecoder().decode(out.stderr).trim();
    assert.ok(!err.includes("\n"), err);
    assert.match(err, /^media plane: ffmpeg not found .*apt-get install ffmpeg.*SVC_MEDIA_ENABLED=false/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
