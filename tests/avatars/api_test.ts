/**
 * The avatar routes: create from a style and from a drawing, list/get/delete, preview, scopes,
 * cross-project 404, the route's own body limit, quota, refusals storing nothing, and `avatar_config` of a
 * session create naming a project avatar (refused once deleted).
 */
import assert from "node:assert/strict";
import { checkErrorBody, engineBody, testTls } from "../../testing/fixtures.ts";
import { startFakeEngine } from "../../testing/fake_engine.ts";
import { createHarness, type Harness } from "../../testing/harness.ts";

const DRAWING = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 200 200">
  <circle cx="100" cy="90" r="70" fill="#30a0e0"/>
  <g id="eyes-open"><circle cx="75" cy="75" r="8" fill="#fff"/><circle cx="125" cy="75" r="8" fill="#fff"/></g>
  <g id="eyes-closed"><rect x="67" y="74" width="16" height="3"/><rect x="117" y="74" width="16" height="3"/></g>
  <rect id="mouth" x="80" y="110" width="40" height="22" fill="#c02040"/>
  <script>alert(1)</script>
</svg>`;

async function kvKeys(h: Harness, projectId: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of h.kv.list({ prefix: ["project", projectId] })) {
    if (String(e.key[2]).startsWith("avatar")) out.push(JSON.stringify(e.key));
  }
  return out;
}

Deno.test("avatars: create from a style and a drawing, list newest first with a cursor, get, preview, delete", async () => {
  const h = await createHarness();
  try {
    const key = await h.key("proj_a");
    const style = await h.req("POST", "/v1/avatars", {
      key,
      body: { name: "Mascot", style: { hair_style: "afro", skin_color: "#6b4026", accessory: "headset" } },
    });
    assert.equal(style.status, 201, style.text);
    assert.match(style.body.avatar_id, /^av_/);
    assert.equal(style.body.source, "style");
    assert.equal(style.body.name, "Mascot");
    assert.equal(style.body.preview_url, `/v1/avatars/${style.body.avatar_id}/preview.png`);
    assert.equal(typeof style.body.created_at, "number");
    assert.equal(style.body.style.face_shape, "oval", "defaults filled in");

    // A drawing with a script is refused as a whole (nothing stored).
    const before = await kvKeys(h, "proj_a");
    const bad = await h.req("POST", "/v1/avatars", { key, body: { name: "Bad", svg: DRAWING } });
    const err = checkErrorBody(bad, { status: 400, code: "SVC_INVALID_AVATAR" });
    assert.match(String(err.message), /<script>/);
    assert.deepEqual(await kvKeys(h, "proj_a"), before, "nothing of a refused upload is stored");

    h.clock.advance(10);
    const svg = await h.req("POST", "/v1/avatars", {
      key,
      body: { name: "Drawn", svg: DRAWING.replace("<script>alert(1)</script>", "") },
    });
    assert.equal(svg.status, 201, svg.text);
    assert.equal(svg.body.source, "svg");

    const page1 = await h.req("GET", "/v1/avatars?limit=1", { key });
    assert.equal(page1.status, 200, page1.text);
    assert.deepEqual(page1.body.data.map((a: { avatar_id: string }) => a.avatar_id), [svg.body.avatar_id]);
    assert.equal(typeof page1.body.next_cursor, "string");
    const page2 = await h.req(
      "GET",
      `/v1/avatars?limit=1&cursor=${encodeURIComponent(page1.body.next_cursor)}`,
      {
        key,
      },
    );
    assert.deepEqual(page2.body.data.map((a: { avatar_id: string }) => a.avatar_id), [style.body.avatar_id]);
    assert.equal(page2.body.next_cursor, null);
    checkErrorBody(await h.req("GET", "/v1/avatars?limit=0", { key }), {
      status: 400,
      code: "SVC_INVALID_REQUEST",
    });
    checkErrorBody(await h.req("GET", "/v1/avatars?cursor=v1.x.y", { key }), {
      status: 400,
      code: "SVC_INVALID_REQUEST",
    });

    const got = await h.req("GET", `/v1/avatars/${svg.body.avatar_id}`, { key });
    assert.equal(got.status, 200);
    assert.deepEqual(got.body, svg.body);

    for (const id of [style.body.avatar_id, svg.body.avatar_id]) {
      for (const viseme of ["", "?viseme=aa"]) {
        const res = await h.fetch(
          new Request(`http://svc.test/v1/avatars/${id}/preview.png${viseme}`, {
            headers: { authorization: `Bearer ${key}` },
          }),
        );
        assert.equal(res.status, 200);
        assert.equal(res.headers.get("content-type"), "image/png");
        const png = new Uint8Array(await res.arrayBuffer());
        assert.deepEqual([...png.slice(1, 4)], [0x50, 0x4e, 0x47]);
        const view = new DataView(png.buffer);
        assert.deepEqual([view.getUint32(16), view.getUint32(20)], [512, 512]);
      }
    }
    checkErrorBody(await h.req("GET", `/v1/avatars/${svg.body.avatar_id}/preview.png?viseme=xx`, { key }), {
      status: 400,
      code: "SVC_INVALID_REQUEST",
    });

    const del = await h.req("DELETE", `/v1/avatars/${svg.body.avatar_id}`, { key });
    assert.equal(del.status, 204);
    checkErrorBody(await h.req("GET", `/v1/avatars/${svg.body.avatar_id}`, { key }), {
      status: 404,
      code: "SVC_AVATAR_NOT_FOUND",
    });
    checkErrorBody(await h.req("DELETE", `/v1/avatars/${svg.body.avatar_id}`, { key }), {
      status: 404,
      code: "SVC_AVATAR_NOT_FOUND",
    });
    const after = await h.req("GET", "/v1/avatars", { key });
    assert.deepEqual(after.body.data.map((a: { avatar_id: string }) => a.avatar_id), [style.body.avatar_id]);
  } finally {
    await h.close();
  }
});

Deno.test("avatars: unknown style parameters and bad values answer 400; scopes; another project's id is 404", async () => {
  const h = await createHarness();
  try {
    const key = await h.key("proj_a");
    for (const style of [{ hair: "bob" }, { hair_style: "mohawk" }, { skin_color: "red" }]) {
      const res = await h.req("POST", "/v1/avatars", { key, body: { name: "x", style } });
      assert.equal(res.status, 400, res.text);
    }
    checkErrorBody(
      await h.req("POST", "/v1/avatars", { key, body: { name: "x", style: {}, svg: "<svg/>" } }),
      {
        status: 400,
        code: "SVC_INVALID_REQUEST",
      },
    );
    const made = await h.req("POST", "/v1/avatars", { key, body: { name: "A", style: {} } });
    assert.equal(made.status, 201);
    const id = made.body.avatar_id;

    const sessionsOnly = await h.key("proj_a", ["sessions:read", "sessions:write"]);
    for (
      const [method, path] of [["GET", "/v1/avatars"], ["GET", `/v1/avatars/${id}`], [
        "DELETE",
        `/v1/avatars/${id}`,
      ]]
    ) {
      checkErrorBody(await h.req(method, path, { key: sessionsOnly }), {
        status: 403,
        code: "SVC_AUTH_MISSING_SCOPE",
      });
    }
    checkErrorBody(
      await h.req("POST", "/v1/avatars", { key: sessionsOnly, body: { name: "A", style: {} } }),
      {
        status: 403,
        code: "SVC_AUTH_MISSING_SCOPE",
      },
    );
    const readOnly = await h.key("proj_a", ["avatars:read"]);
    assert.equal((await h.req("GET", `/v1/avatars/${id}`, { key: readOnly })).status, 200);
    checkErrorBody(await h.req("DELETE", `/v1/avatars/${id}`, { key: readOnly }), {
      status: 403,
      code: "SVC_AUTH_MISSING_SCOPE",
    });

    const other = await h.key("proj_b");
    for (
      const [method, path] of [["GET", `/v1/avatars/${id}`], ["DELETE", `/v1/avatars/${id}`], [
        "GET",
        `/v1/avatars/${id}/preview.png`,
      ]]
    ) {
      checkErrorBody(await h.req(method, path, { key: other }), {
        status: 404,
        code: "SVC_AVATAR_NOT_FOUND",
      });
    }
    assert.deepEqual((await h.req("GET", "/v1/avatars", { key: other })).body, {
      data: [],
      next_cursor: null,
    });
    assert.equal((await h.req("GET", `/v1/avatars/${id}`, { key })).status, 200, "still there");
  } finally {
    await h.close();
  }
});

Deno.test("avatars: POST /v1/avatars takes bodies up to 512 KiB (413 above); other routes keep the general limit", async () => {
  const h = await createHarness();
  try {
    const key = await h.key("proj_a");
    // A 104 KB drawing (over the general 64 KiB limit) is accepted. Its paths only move (nothing to draw), so
    // it costs less than a stock avatar to rasterise: drawn lines cost 2.2× (4.3× with the suite running
    // beside it), near the upload's cost limit, which is not this test's subject.
    const big = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 100"><g>${
      `<path d="M0 0 M1 1 M2 2"/>`.repeat(4000)
    }</g><rect id="mouth" x="40" y="60" width="20" height="10"/></svg>`;
    assert.ok(big.length > 64 * 1024);
    const ok = await h.req("POST", "/v1/avatars", { key, body: { name: "Big", svg: big } });
    assert.equal(ok.status, 201, ok.text.slice(0, 300));
    const huge = await h.req("POST", "/v1/avatars", {
      key,
      body: { name: "Huge", svg: "x".repeat(520 * 1024) },
    });
    checkErrorBody(huge, { status: 413, code: "SVC_PAYLOAD_TOO_LARGE" });
    const other = await h.req("POST", "/v1/api-keys", {
      key,
      body: { name: "x".repeat(70 * 1024), scopes: [] },
    });
    checkErrorBody(other, { status: 413, code: "SVC_PAYLOAD_TOO_LARGE" });
    // The big drawing reads back whole from its parts.
    const preview = await h.fetch(
      new Request(`http://svc.test/v1/avatars/${ok.body.avatar_id}/preview.png`, {
        headers: { authorization: `Bearer ${key}` },
      }),
    );
    assert.equal(preview.status, 200);
    await preview.body?.cancel();
    let parts = 0;
    for await (const _ of h.kv.list({ prefix: ["project", "proj_a", "avatar_svg", ok.body.avatar_id] })) {
      parts++;
    }
    assert.ok(parts >= 2, `stored in ${parts} parts`);
  } finally {
    await h.close();
  }
});

Deno.test("avatars: the per-project quota refuses the next create; deleting frees a place", async () => {
  const h = await createHarness({ env: { SVC_RATE_LIMIT_PER_MINUTE: "0" } });
  try {
    const key = await h.key("proj_q");
    const { AVATAR_QUOTA } = await import("../../src/avatars/service.ts");
    const ids: string[] = [];
    for (let i = 0; i < AVATAR_QUOTA; i++) {
      const res = await h.req("POST", "/v1/avatars", { key, body: { name: `A${i}`, style: {} } });
      assert.equal(res.status, 201, res.text);
      ids.push(res.body.avatar_id);
    }
    const over = await h.req("POST", "/v1/avatars", { key, body: { name: "one more", style: {} } });
    const err = checkErrorBody(over, { status: 400, code: "SVC_INVALID_AVATAR" });
    assert.match(String(err.message), /quota/);
    assert.equal(
      (await h.req("POST", "/v1/avatars", { key: await h.key("proj_r"), body: { name: "x", style: {} } }))
        .status,
      201,
    );
    assert.equal((await h.req("DELETE", `/v1/avatars/${ids[0]}`, { key })).status, 204);
    assert.equal(
      (await h.req("POST", "/v1/avatars", { key, body: { name: "again", style: {} } })).status,
      201,
    );
  } finally {
    await h.close();
  }
});

Deno.test("avatars: a session create takes a project avatar's id; another project's or a deleted one is 400", async () => {
  const engine = await startFakeEngine(testTls, "ok");
  const h = await createHarness({ caCerts: [testTls.caPem] });
  try {
    const key = await h.key("proj_a");
    const made = await h.req("POST", "/v1/avatars", {
      key,
      body: { name: "A", style: { hair_style: "bun" } },
    });
    const avatar_id = made.body.avatar_id;
    const ok = await h.req("POST", "/v1/sessions", {
      key,
      body: engineBody(engine.url, { avatar_config: { avatar_id } }),
    });
    assert.equal(ok.status, 200, ok.text);
    const start = engine.messages.find((m) => m.type === "session.start") as {
      metadata: { avatar_id: string };
    };
    assert.equal(start.metadata.avatar_id, avatar_id);
    const foreign = await h.req("POST", "/v1/sessions", {
      key: await h.key("proj_b"),
      body: engineBody(engine.url, { avatar_config: { avatar_id } }),
    });
    checkErrorBody(foreign, { status: 400, code: "SVC_RENDER_MISCONFIGURED" });
    assert.equal((await h.req("DELETE", `/v1/avatars/${avatar_id}`, { key })).status, 204);
    const again = await h.req("POST", "/v1/sessions", {
      key,
      body: engineBody(engine.url, { avatar_config: { avatar_id } }),
    });
    checkErrorBody(again, { status: 400, code: "SVC_RENDER_MISCONFIGURED" });
    // The running session is untouched by the deletion.
    const live = await h.req("GET", `/v1/sessions/${encodeURIComponent(ok.body.session_id)}`, { key });
    assert.equal(live.body.status, "active");
  } finally {
    await h.close();
    await engine.close();
  }
});
