/**
 * The media WebSocket's token checks and its first bytes: hello, init segment, then a keyframe.
 */
import assert from "node:assert/strict";
import { sign } from "hono/jwt";
import { TOKEN_TTL_MS } from "../../src/auth/tokens.ts";
import { TEST_TOKEN_SECRET } from "../../testing/harness.ts";
import { DEADLINE_MS } from "../../testing/deadline.ts";
import { MediaClientRecorder, readSegment, withMedia } from "../../testing/media.ts";

Deno.test("media socket: a client token in the subprotocol gets hello, the init segment, then a keyframe", async () => {
  await withMedia(async ({ create, wsUrl }) => {
    const s = await create();
    assert.match(s.stream_metadata.media_url, /^ws:\/\/localhost:8787\/media\/v0\/sessions\/session:/);
    assert.ok(s.stream_metadata.media_url.endsWith(s.session_id));
    const c = MediaClientRecorder.withToken(wsUrl(s.session_id), s.client_token);
    await c.opened;
    assert.equal(c.ws.protocol, "avatar-media.v0", "the token is never echoed as the selected subprotocol");
    // The video encoder starts with the first video client: audio may come before its first frame.
    await c.until(() => c.segments().some((x) => x.track === 1), DEADLINE_MS, "a video segment");
    assert.equal(c.texts[0].type, "hello");
    assert.match(c.texts[0].mime, /^video\/mp4; codecs="avc1\.[0-9a-f]{6}, opus"$/);
    assert.deepEqual(c.texts[0].video, { width: 256, height: 256, fps: 25 });
    assert.equal(c.texts[0].input_sample_rate, 24000);
    const first = new TextDecoder().decode(c.binaries[0].subarray(4, 8));
    assert.equal(first, "ftyp", "the first binary message is the init segment");
    const firstVideo = c.segments().find((x) => x.track === 1)!;
    assert.ok(firstVideo.key, "the first video segment is a keyframe");
    await c.close();
  });
});

Deno.test("media socket: the session token and the token query parameter are accepted too", async () => {
  await withMedia(async ({ create, wsUrl }) => {
    const s = await create();
    const a = MediaClientRecorder.withToken(wsUrl(s.session_id), s.stream_metadata.session_token);
    const b = new MediaClientRecorder(wsUrl(s.session_id, `?token=${s.client_token}`));
    await a.until(() => a.segments().length > 0, DEADLINE_MS, "segments over the session token");
    await b.until(() => b.segments().length > 0, DEADLINE_MS, "segments over the query token");
    assert.equal(b.ws.protocol, "");
    await a.close();
    await b.close();
  });
});

Deno.test("media socket: expired, wrong-session, wrong-purpose, garbage and missing tokens are refused with their codes", async () => {
  await withMedia(async ({ h, create, wsUrl }) => {
    const s1 = await create();
    const s2 = await create();
    const refused = async (url: string, token: string | null) => {
      const c = token === null ? new MediaClientRecorder(url) : MediaClientRecorder.withToken(url, token);
      await c.closed;
      assert.equal(c.binaries.length, 0, "nothing is sent before the token is accepted");
      return { code: c.closeCode, reason: c.closeReason };
    };
    // another session's token
    assert.deepEqual(await refused(wsUrl(s1.session_id), s2.client_token), {
      code: 4403,
      reason: "SVC_AUTH_INVALID_TOKEN",
    });
    // a token for another purpose, signed with the right secret
    const now = Math.floor(h.clock.now() / 1000);
    const otherPurpose = await sign(
      { iss: "svc", sub: s1.session_id, pid: "proj_media", pur: "admin", iat: now, exp: now + 300, jti: "x" },
      TEST_TOKEN_SECRET,
      "HS256",
    );
    assert.deepEqual(await refused(wsUrl(s1.session_id), otherPurpose), {
      code: 4403,
      reason: "SVC_AUTH_INVALID_TOKEN",
    });
    // garbage, and no token at all
    assert.equal((await refused(wsUrl(s1.session_id), "not.a.token")).code, 4403);
    assert.equal((await refused(wsUrl(s1.session_id), null)).code, 4403);
    // a forged signature
    const forged = await sign(
      {
        iss: "svc",
        sub: s1.session_id,
        pid: "proj_media",
        pur: "client",
        iat: now,
        exp: now + 300,
        jti: "y",
      },
      "another-secret-0123456789abcdef0123456789",
      "HS256",
    );
    assert.equal((await refused(wsUrl(s1.session_id), forged)).code, 4403);
    // expired: the injected clock moves past the 5-minute lifetime
    h.clock.advance(TOKEN_TTL_MS + 1000);
    assert.deepEqual(await refused(wsUrl(s1.session_id), s1.client_token), {
      code: 4401,
      reason: "SVC_AUTH_EXPIRED_TOKEN",
    });
    // …and a fresh token from the client-token route works again
    const { key } = { key: await h.key("proj_media") };
    const fresh = await h.req("POST", `/v1/sessions/${s1.session_id}/client-token`, { key });
    assert.equal(fresh.status, 200);
    const ok = MediaClientRecorder.withToken(wsUrl(s1.session_id), fresh.body.client_token);
    await ok.until(() => ok.segments().length > 0, DEADLINE_MS, "segments after refresh");
    await ok.close();
  });
});

Deno.test("media socket: an ended session answers 4404; a plain GET answers a JSON 400", async () => {
  await withMedia(async ({ h, key, create, wsUrl, base }) => {
    const s = await create();
    const end = await h.req("POST", `/v1/sessions/${s.session_id}/end`, { key });
    assert.equal(end.status, 200);
    const c = MediaClientRecorder.withToken(wsUrl(s.session_id), s.client_token);
    await c.closed;
    assert.equal(c.closeCode, 4404);
    assert.equal(c.closeReason, "SVC_SESSION_NOT_FOUND");

    const plain = await fetch(`${base}/media/v0/sessions/${s.session_id}`);
    const body = await plain.json();
    assert.equal(plain.status, 400);
    assert.equal(body.code, "SVC_INVALID_REQUEST");
  });
});

Deno.test("media socket: segments decode time is continuous and every second starts with a keyframe", async () => {
  await withMedia(async ({ create, wsUrl }) => {
    const s = await create();
    const c = MediaClientRecorder.withToken(wsUrl(s.session_id), s.client_token);
    await c.until(
      () => c.segments().filter((x) => x.track === 1).length >= 60,
      DEADLINE_MS,
      "60 video segments",
    );
    const video = c.segments().filter((x) => x.track === 1);
    // Frames are numbered on the media clock: a frame dropped under load leaves a gap of whole frames,
    // never a shift (how many drop on a busy machine is not a test's business: the bench counts them).
    for (let i = 1; i < video.length; i++) {
      const step = video[i].baseTime - video[i - 1].baseTime;
      assert.ok(step > 0 && step % 3600 === 0, `bad step ${step} at ${i}`);
    }
    const keys = video.map((v, i) => v.key ? i : -1).filter((i) => i >= 0);
    for (let i = 1; i < keys.length; i++) {
      assert.ok(keys[i] - keys[i - 1] <= 25, "a keyframe at least every second");
    }
    assert.ok(keys.length >= 2);
    const audio = c.segments().filter((x) => x.track === 2);
    for (let i = 1; i < audio.length; i++) {
      assert.equal(
        audio[i].baseTime,
        audio[i - 1].baseTime + audio[i - 1].durations.reduce((a, b) => a + b, 0),
      );
    }
    assert.ok(readSegment(c.binaries[0]) === null);
    await c.close();
  });
});
