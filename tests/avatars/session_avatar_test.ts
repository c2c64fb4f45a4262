/**
 * A session running a project avatar: its video frames are drawn from the avatar's style (its clothing's
 * red where the stock avatar is green — read in a frame the session streamed, decoded by ffmpeg, and in the
 * renderer's own frame), its art is served to the session's video-free clients with the
 * session's token only (and carried in their hello) (with the CSP and nosniff headers), and deleting the avatar leaves the running
 * session its art while new sessions are refused. A video client's hello says where each avatar's art draws
 * the mouth (a drawing's own box), so that it needs no art document.
 */
import assert from "node:assert/strict";
import { decodeFirstVideoFrame, MediaClientRecorder, withMedia } from "../../testing/media.ts";
import { VISEMES } from "../../src/media/lipsync/visemes.ts";
import { DEADLINE_MS } from "../../testing/deadline.ts";

/** The V (red-difference) sample of an I420 frame at (x, y). */
function vAt(frame: Uint8Array, width: number, height: number, x: number, y: number): number {
  const quarter = (width / 2) * (height / 2);
  return frame[width * height + quarter + (y >> 1) * (width / 2) + (x >> 1)];
}

Deno.test("session avatar: video frames, video-free art (token of that session only), deletion while running", async () => {
  await withMedia(async ({ h, plane, base, key, create, wsUrl }) => {
    const made = await h.req("POST", "/v1/avatars", {
      key,
      body: {
        name: "Red",
        style: { clothing_color: "#e02020", clothing_style: "tshirt", hair_style: "bun" },
      },
    });
    assert.equal(made.status, 201, made.text);
    const avatarId = made.body.avatar_id;
    const session = await create({ avatar_config: { avatar_id: avatarId, bg_id: "studio" } });
    const stock = await create({ avatar_config: { avatar_id: "ada", bg_id: "studio" } });

    // Video: the renderer draws the project avatar (prepared when its session started).
    const { width, height } = plane.renderer.format;
    const frameOf = async (avatar: string) =>
      await plane.renderer.open({ avatarId: avatar, bgId: "studio", seed: 1 }).renderFrame({
        index: 0,
        timeMs: 0,
        audio: new Int16Array(1920),
        sampleRate: 48000,
        speaking: false,
      });
    const mine = await frameOf(avatarId);
    const ada = await frameOf("ada");
    // The shirt, low in the frame: red (high V) for the project avatar, green (low V) for ada.
    const [x, y] = [Math.round(width * 0.5), Math.round(height * 0.95)];
    const vMine = vAt(mine, width, height, x, y), vAda = vAt(ada, width, height, x, y);
    assert.ok(vMine > 170, `project avatar's shirt V ${vMine}`);
    assert.ok(vAda < 128, `ada's shirt V ${vAda}`);
    // …and in what each session streams to a video client: its first frame, decoded from the fMP4 it sent.
    for (const [s, red] of [[session, true], [stock, false]] as const) {
      const client = MediaClientRecorder.withToken(wsUrl(s.session_id), s.client_token);
      try {
        const frame = await decodeFirstVideoFrame(client, width, height);
        // Averaged over a few pixels of the shirt: the encoder's chroma is not exact.
        let v = 0;
        for (const dx of [-8, 0, 8]) v += vAt(frame, width, height, x + dx, y) / 3;
        if (red) assert.ok(v > 160, `project avatar's streamed shirt V ${v}`);
        else assert.ok(v < 128, `ada's streamed shirt V ${v}`);
      } finally {
        await client.close();
      }
    }

    // Video-free: the art with this session's token; not without it, nor with another session's.
    const artUrl = `${base}/media/v0/art/${avatarId}`;
    const res = await fetch(`${artUrl}?token=${encodeURIComponent(session.client_token)}`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-security-policy"), "default-src 'none'; style-src 'unsafe-inline'");
    assert.equal(res.headers.get("x-content-type-options"), "nosniff");
    const doc = await res.json();
    assert.equal(doc.avatar_id, avatarId);
    assert.ok(doc.body.includes("#e02020"), "the style's clothing in the body layer");
    assert.deepEqual(Object.keys(doc.mouths).sort(), [...VISEMES].sort());
    for (
      const url of [artUrl, `${artUrl}?token=${encodeURIComponent(stock.client_token)}`, `${artUrl}?token=x`]
    ) {
      const refused = await fetch(url);
      assert.equal(refused.status, 404, url);
      await refused.body?.cancel();
    }
    // The session's video-free clients get the same document in their hello (it is small).
    const videoFree = MediaClientRecorder.withToken(
      wsUrl(session.session_id, "?video=0"),
      session.client_token,
    );
    try {
      await videoFree.until(() => videoFree.texts.length > 0, DEADLINE_MS, "hello");
      assert.equal(videoFree.texts[0].animation.art_path, `/media/v0/art/${avatarId}`);
      assert.deepEqual(videoFree.texts[0].animation.art, doc);
    } finally {
      await videoFree.close();
    }
    const stockArt = await fetch(`${base}/media/v0/art/ada`);
    assert.equal(stockArt.headers.get("x-content-type-options"), "nosniff");
    await stockArt.body?.cancel();

    // Deleted while the session runs: the session keeps its art; a new session naming it is refused.
    assert.equal((await h.req("DELETE", `/v1/avatars/${avatarId}`, { key })).status, 204);
    const still = await fetch(`${artUrl}?token=${encodeURIComponent(session.client_token)}`);
    assert.equal(still.status, 200);
    await still.body?.cancel();
    await assert.rejects(() => create({ avatar_config: { avatar_id: avatarId } }), /400/);
  });
});

const DRAWING = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 200 200">
  <circle cx="100" cy="90" r="70" fill="#30a0e0"/>
  <g id="eyes-open"><circle cx="75" cy="75" r="8" fill="#fff"/><circle cx="125" cy="75" r="8" fill="#fff"/></g>
  <g id="eyes-closed"><rect x="67" y="74" width="16" height="3"/><rect x="117" y="74" width="16" height="3"/></g>
  <rect id="mouth" x="60" y="120" width="80" height="30" fill="#c02040"/>
</svg>`;

Deno.test("session avatar: a video client's hello carries where the art draws the mouth — a drawing's own box, the stock one", async () => {
  await withMedia(async ({ h, base, key, create, wsUrl }) => {
    const made = await h.req("POST", "/v1/avatars", { key, body: { name: "Drawn", svg: DRAWING } });
    assert.equal(made.status, 201, made.text);
    const drawn = await create({ avatar_config: { avatar_id: made.body.avatar_id, bg_id: "studio" } });
    const stock = await create({ avatar_config: { avatar_id: "ada", bg_id: "studio" } });
    const boxes = [];
    for (const s of [drawn, stock]) {
      const client = MediaClientRecorder.withToken(wsUrl(s.session_id), s.client_token);
      try {
        await client.until(() => client.texts.length > 0, DEADLINE_MS, "hello");
        const hello = client.texts[0];
        const res = await fetch(`${base}${hello.art_path}?token=${encodeURIComponent(s.client_token)}`);
        assert.equal(res.status, 200);
        const doc = await res.json();
        assert.deepEqual(hello.mouth_box, doc.mouth_box);
        assert.deepEqual(hello.view_box, doc.view_box);
        assert.equal(hello.art, undefined, "no art document in a video client's hello");
        boxes.push(hello.mouth_box);
      } finally {
        await client.close();
      }
    }
    // The drawing's mouth (80×30 of 200 px, wider and lower than the stock one) is its own.
    assert.notDeepEqual(boxes[0], boxes[1]);
    assert.ok(boxes[0].width > boxes[1].width, JSON.stringify(boxes));
  });
});
