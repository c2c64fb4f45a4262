/**
 * `GET /v1/sessions`: filters (one or more statuses, provider type, transport, creation time), newest-first
 * pages through an opaque cursor, the caller's project only, bad input answered 400 with the flat body,
 * pages that stay stable while sessions are created, and the listing index kept in step with the records on
 * every transition — the API's, the worker's, the reaper's and the end journal's.
 */
import assert from "node:assert/strict";
import { insertSession, transitionSession } from "../../src/kv/sessions.ts";
import type { SessionRecord } from "../../src/vocabulary/session_record.ts";
import { SESSION_STATUSES, type SessionStatus } from "../../src/vocabulary/session_states.ts";
import { PROVIDER_TYPES, type ProviderType } from "../../src/providers/definitions/provider_types.ts";
import { TRANSPORT_KINDS } from "../../src/vocabulary/transports.ts";
import { Reaper } from "../../src/fleet/reaper.ts";
import { silentLogger } from "../../src/log.ts";
import { ownerLeaseKey } from "../../src/kv/keys.ts";
import { setSessionRetention } from "../../src/kv/session_retention.ts";
import { type IndexValue, viewOf } from "../../src/kv/session_index.ts";
import { createHarness, type Harness, type JsonResponse } from "../../testing/harness.ts";
import { FakeBridge } from "../../testing/fake_bridge.ts";
import { checkErrorBody, engineBody } from "../../testing/fixtures.ts";
import { faultyKv, KvFaults } from "../../testing/faulty_kv.ts";
import { eventually } from "../../testing/webhook_receiver.ts";
import { assertIndexInStep, seedSession } from "../../testing/session_index.ts";

const T0 = 1_780_000_000_000;
const TRANSPORTS = TRANSPORT_KINDS;

/** A small deterministic PRNG (the test's data is the same on every run). */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Newest first, ties by session id descending (the listing's order). */
const newestFirst = (a: SessionRecord, b: SessionRecord) =>
  b.created_at - a.created_at || (a.session_id < b.session_id ? 1 : a.session_id > b.session_id ? -1 : 0);

/** Every page of a query, following next_cursor; returns the ids in order. */
async function allPages(h: Harness, key: string, query: string, limit: number): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 500; pages++) {
    const q: string = `${query}${query ? "&" : ""}limit=${limit}${
      cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""
    }`;
    const res: JsonResponse = await h.req("GET", `/v1/sessions?${q}`, { key });
    assert.equal(res.status, 200, `${q}: ${res.text}`);
    assert.ok(res.body.data.length <= limit);
    ids.push(...res.body.data.map((s: { session_id: string }) => s.session_id));
    cursor = res.body.next_cursor;
    if (cursor === null) return ids;
    assert.equal(res.body.data.length, limit, "only the last page is short");
  }
  throw new Error("too many pages");
}

Deno.test("list sessions: every filter and combination, newest first, across pages of every size", async () => {
  const h = await createHarness({ env: { SVC_RATE_LIMIT_PER_MINUTE: "0" } });
  try {
    const key = await h.key("proj_list", ["sessions:read"]);
    const rnd = prng(24);
    const seeded: SessionRecord[] = [];
    for (let i = 0; i < 70; i++) {
      seeded.push(
        await seedSession(h.kv, {
          projectId: "proj_list",
          status: SESSION_STATUSES[Math.floor(rnd() * SESSION_STATUSES.length)],
          provider: PROVIDER_TYPES[Math.floor(rnd() * PROVIDER_TYPES.length)] as ProviderType,
          transport: TRANSPORTS[Math.floor(rnd() * 2)],
          // some sessions share a millisecond: the order then goes by session id
          createdAt: T0 + Math.floor(i / 3) * 1000,
        }),
      );
    }
    await assertIndexInStep(h.kv, "proj_list", "after seeding");

    // No filter: everything, newest first; each item is exactly what GET answers.
    const first = await h.req("GET", "/v1/sessions", { key });
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body.data.length, 20, "default limit 20");
    assert.equal(typeof first.body.next_cursor, "string");
    const ordered = [...seeded].sort(newestFirst);
    assert.deepEqual(
      first.body.data.map((s: { session_id: string }) => s.session_id),
      ordered.slice(0, 20).map((r) => r.session_id),
    );
    for (const item of first.body.data.slice(0, 6)) {
      const got = await h.req("GET", `/v1/sessions/${item.session_id}`, { key });
      assert.deepEqual(item, got.body, "an item is the GET answer");
    }
    const ended = first.body.data.find((s: { status: string }) => s.status === "ended");
    if (ended) assert.equal(ended.end_reason, "ended_by_api", "ended items carry end_reason");

    const cases: { query: string; match: (r: SessionRecord) => boolean }[] = [
      { query: "", match: () => true },
      { query: "status=active", match: (r) => r.status === "active" },
      { query: "status=active&status=ending", match: (r) => ["active", "ending"].includes(r.status) },
      {
        query: "status=created,activating,failed",
        match: (r) => ["created", "activating", "failed"].includes(r.status),
      },
      { query: `status=${SESSION_STATUSES.join(",")}`, match: () => true },
      { query: "provider_type=vendor2", match: (r) => r.provider_type === "vendor2" },
      { query: "transport=webrtc_sfu", match: (r) => r.transport === "webrtc_sfu" },
      {
        query:
          "status=ended&status=ended_with_warnings&provider_type=external_engine&transport=websocket_fmp4",
        match: (r) =>
          ["ended", "ended_with_warnings"].includes(r.status) && r.provider_type === "external_engine" &&
          r.transport === "websocket_fmp4",
      },
      {
        query: `created_after=${T0 + 5000}&created_before=${T0 + 15000}`,
        match: (r) => r.created_at >= T0 + 5000 && r.created_at < T0 + 15000,
      },
      {
        query: `status=active,failed&created_after=${T0 + 3000}&transport=websocket_fmp4`,
        match: (r) =>
          ["active", "failed"].includes(r.status) && r.created_at >= T0 + 3000 &&
          r.transport === "websocket_fmp4",
      },
      { query: `created_before=${T0}`, match: () => false },
      { query: `created_after=${T0 + 9000}&created_before=${T0 + 9000}`, match: () => false },
    ];
    for (const c of cases) {
      const expected = seeded.filter(c.match).sort(newestFirst).map((r) => r.session_id);
      for (const limit of [1, 3, 7, 100]) {
        assert.deepEqual(
          await allPages(h, key, c.query, limit),
          expected,
          `${c.query || "(none)"} limit=${limit}`,
        );
      }
    }
  } finally {
    await h.close();
  }
});

Deno.test("list sessions: bad input answers 400 with the flat error body; the scope is sessions:read", async () => {
  const h = await createHarness();
  try {
    const key = await h.key("proj_bad", ["sessions:read"]);
    const other = await h.key("proj_other", ["sessions:read"]);
    for (let i = 0; i < 5; i++) {
      await seedSession(h.kv, { projectId: "proj_bad", status: "active", createdAt: T0 + i });
      await seedSession(h.kv, { projectId: "proj_other", status: "active", createdAt: T0 + i });
    }
    const page = await h.req("GET", "/v1/sessions?limit=2&status=active", { key });
    const cursor: string = page.body.next_cursor;
    assert.ok(cursor);
    const otherCursor: string =
      (await h.req("GET", "/v1/sessions?limit=2&status=active", { key: other })).body
        .next_cursor;
    // a cursor with one character changed in each of its parts
    const flip = (s: string, at: number) => s.slice(0, at) + (s[at] === "A" ? "B" : "A") + s.slice(at + 1);
    const bad = [
      "status=unknown",
      "status=active,unknown",
      "status=",
      "status=auto",
      "provider_type=openai",
      "transport=auto",
      "limit=0",
      "limit=101",
      "limit=-1",
      "limit=abc",
      "limit=2.5",
      "created_after=yesterday",
      "created_before=-5",
      "cursor=",
      "cursor=garbage",
      `cursor=${"x".repeat(600)}`,
      `status=active&limit=2&cursor=${encodeURIComponent(flip(cursor, 5))}`,
      `status=active&limit=2&cursor=${encodeURIComponent(flip(cursor, cursor.length - 3))}`,
      `status=active&limit=2&cursor=${encodeURIComponent(otherCursor)}`, // another project's
      `status=ended&limit=2&cursor=${encodeURIComponent(cursor)}`, // other filters
      `limit=2&cursor=${encodeURIComponent(cursor)}`, // filters dropped
      "unknown_param=1",
      "Status=active",
    ];
    for (const q of bad) {
      const res = await h.req("GET", `/v1/sessions?${q}`, { key });
      checkErrorBody(res, { status: 400, code: "SVC_INVALID_REQUEST" });
      assert.ok(!res.text.includes("garbage") && !res.text.includes("unknown_param="), `${q}: no echo`);
    }
    // the same cursor with the same filters and another page size is fine
    const next = await h.req(
      "GET",
      `/v1/sessions?status=active&limit=3&cursor=${encodeURIComponent(cursor)}`,
      {
        key,
      },
    );
    assert.equal(next.status, 200, next.text);
    assert.equal(next.body.data.length, 3);
    // scope
    const writeOnly = await h.key("proj_bad", ["sessions:write"]);
    checkErrorBody(await h.req("GET", "/v1/sessions", { key: writeOnly }), {
      status: 403,
      code: "SVC_AUTH_MISSING_SCOPE",
    });
    checkErrorBody(await h.req("GET", "/v1/sessions", {}), {
      status: 401,
      code: "SVC_AUTH_MISSING_CREDENTIALS",
    });
  } finally {
    await h.close();
  }
});

Deno.test("list sessions: another project's sessions never appear, with any filter", async () => {
  const h = await createHarness({ env: { SVC_RATE_LIMIT_PER_MINUTE: "0" } });
  try {
    const a = await h.key("proj_a", ["sessions:read"]);
    const b = await h.key("proj_b", ["sessions:read"]);
    const empty = await h.key("proj_empty", ["sessions:read"]);
    const ids = { proj_a: new Set<string>(), proj_b: new Set<string>() };
    for (let i = 0; i < 12; i++) {
      for (const p of ["proj_a", "proj_b"] as const) {
        const r = await seedSession(h.kv, {
          projectId: p,
          status: SESSION_STATUSES[i % SESSION_STATUSES.length],
          createdAt: T0 + i * 10,
        });
        ids[p].add(r.session_id);
      }
    }
    for (const q of ["", "status=active", `created_after=${T0}`, "provider_type=external_engine"]) {
      for (const [key, project] of [[a, "proj_a"], [b, "proj_b"]] as const) {
        const got = await allPages(h, key, q, 5);
        assert.ok(got.length > 0);
        for (const id of got) assert.ok(ids[project].has(id), `${project} sees only its own (${q})`);
      }
      assert.deepEqual(await allPages(h, empty, q, 5), [], "a project without sessions sees none");
    }
  } finally {
    await h.close();
  }
});

Deno.test("list sessions: pages stay stable while sessions are created (no repeat, no gap)", async () => {
  const fake = new FakeBridge();
  const h = await createHarness({
    bridges: { external_engine: fake },
    env: { SVC_MAX_CONCURRENT_SESSIONS: "200", SVC_RATE_LIMIT_PER_MINUTE: "0" },
  });
  try {
    const key = await h.key("proj_busy");
    const create = async () => {
      const res = await h.req("POST", "/v1/sessions", { key, body: engineBody("wss://engine.example/v0") });
      assert.equal(res.status, 200, res.text);
      return res.body.session_id as string;
    };
    const before: string[] = [];
    for (let i = 0; i < 23; i++) {
      before.push(await create());
      if (i % 4 === 0) h.clock.advance(1); // some share a millisecond, some do not
    }
    h.clock.advance(5);
    const expected = (await allPages(h, key, "", 100)).slice();
    assert.equal(expected.length, 23);
    assert.deepEqual(new Set(expected), new Set(before));

    // Page through 5 at a time while new sessions are created between pages and during each request.
    const seen: string[] = [];
    const created: string[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < 50; pages++) {
      const [res]: [JsonResponse, unknown] = await Promise.all([
        h.req("GET", `/v1/sessions?limit=5${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { key }),
        create().then((id) => created.push(id)),
      ]);
      assert.equal(res.status, 200, res.text);
      seen.push(...res.body.data.map((s: { session_id: string }) => s.session_id));
      cursor = res.body.next_cursor;
      if (!cursor) break;
      created.push(await create());
    }
    // The first page may include sessions created while it was read; after that, exactly the old ones.
    const old = seen.filter((id) => !created.includes(id));
    assert.deepEqual(old, expected, "every session that existed is listed once, in order");
    assert.equal(new Set(seen).size, seen.length, "no session is listed twice");
    assert.ok(created.length >= 8);
    await assertIndexInStep(h.kv, "proj_busy");
  } finally {
    await h.close();
  }
});

Deno.test("list sessions: the index follows the record through the API's, the worker's and the journal's transitions", async () => {
  const real = await Deno.openKv(":memory:");
  const faults = new KvFaults();
  const fake = new FakeBridge();
  let failNext = false;
  const bridge = {
    connect(req: Parameters<FakeBridge["connect"]>[0]) {
      if (failNext) {
        failNext = false;
        req.credentials.zero();
        return Promise.reject(new (class extends Error {})("unreachable"));
      }
      return fake.connect(req);
    },
  };
  const h = await createHarness({
    kv: faultyKv(real, faults),
    bridges: { external_engine: bridge },
    lifecycle: true,
    tickMs: 20,
    endRecordWaitMs: 300,
    journal: { firstDelayMs: 20, maxDelayMs: 100 },
    env: { SVC_SESSION_JOIN_WINDOW_S: "5" },
  });
  const P = "proj_step";
  try {
    const key = await h.key(P);
    const create = async () => {
      const res = await h.req("POST", "/v1/sessions", { key, body: engineBody("wss://engine.example/v0") });
      return res;
    };
    const status = async (sid: string) => (await h.req("GET", `/v1/sessions/${sid}`, { key })).body.status;
    const listed = async (sid: string) =>
      (await h.req("GET", "/v1/sessions?limit=100", { key })).body.data.find((s: { session_id: string }) =>
        s.session_id === sid
      );

    // create → activating → active (the API's insert, the worker's two transitions)
    const a = (await create()).body.session_id;
    await assertIndexInStep(real, P, "after a create");
    assert.equal((await listed(a)).status, "active");
    assert.equal((await h.req("GET", `/v1/sessions?status=active`, { key })).body.data.length, 1);

    // an API end: active → ending → ended
    assert.equal((await h.req("POST", `/v1/sessions/${a}/end`, { key })).status, 200);
    await assertIndexInStep(real, P, "after an API end");
    assert.equal((await listed(a)).end_reason, "ended_by_api");
    assert.equal((await h.req("GET", `/v1/sessions?status=active`, { key })).body.data.length, 0);

    // a start that fails: created → activating → failed
    failNext = true;
    assert.notEqual((await create()).status, 200);
    await assertIndexInStep(real, P, "after a failed start");
    assert.equal((await h.req("GET", `/v1/sessions?status=failed`, { key })).body.data.length, 1);

    // the engine hangs up: the worker's own end (engine_ended)
    const b = (await create()).body.session_id;
    fake.of(b).events.onClosed({ kind: "ended_by_engine", reason: "engine_closed_1000" });
    await eventually(async () => (await status(b)) === "ended", 20_000, "engine end recorded");
    await assertIndexInStep(real, P, "after an engine end");
    assert.equal((await listed(b)).end_reason, "engine_ended");

    // a lifetime end while KV is out: the end journal lands it when KV is back
    const c = (await create()).body.session_id;
    faults.down = true;
    h.clock.advance(6_000);
    await eventually(() => !h.runtime.has(c), 20_000, "the runtime stopped during the outage");
    await new Promise((r) => setTimeout(r, 100));
    faults.down = false;
    await eventually(async () => (await status(c)) === "ended", 20_000, "the journal landed the end");
    await assertIndexInStep(real, P, "after the journal's end");
    assert.equal((await listed(c)).end_reason, "no_client_joined");
  } finally {
    faults.down = false;
    await h.close();
    real.close();
  }
});

Deno.test("list sessions: the reaper's owner_lost ends keep the index in step", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const P = "proj_reap";
    const dead = "inst_dead";
    await kv.set(ownerLeaseKey(dead), {
      instance_id: dead,
      pid: 1,
      hostname: "gone",
      acquired_at: 1,
      expires_at: 1,
      renewed_at: 1,
      reaped_at: null,
    });
    const live = [];
    for (const status of ["created", "activating", "active", "ending"] as SessionStatus[]) {
      live.push(await seedSession(kv, { projectId: P, status, createdAt: T0, owner: dead }));
    }
    await assertIndexInStep(kv, P, "before reaping");
    const reaper = new Reaper({
      kv,
      clock: { now: () => Date.now(), sleep: () => Promise.resolve() },
      logger: silentLogger,
      instanceId: "inst_reaper",
    });
    assert.equal(await reaper.sweep(), 4);
    assert.equal(await assertIndexInStep(kv, P, "after reaping"), 4);
    for await (
      const e of kv.list<IndexValue>({
        prefix: ["project", P, "session_index", "*", "*", "*"],
      })
    ) {
      const view = viewOf(e.key, e.value);
      assert.ok(["ended_with_warnings", "failed"].includes(view.status));
      assert.equal(view.end_reason, "owner_lost");
    }
  } finally {
    kv.close();
  }
});

Deno.test("list sessions: random transitions through the storage functions keep the index in step", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const P = "proj_rand";
    const rnd = prng(7);
    const recs: SessionRecord[] = [];
    for (let step = 0; step < 300; step++) {
      if (recs.length < 5 || rnd() < 0.2) {
        const rec = await seedSession(kv, { projectId: P, status: "created", createdAt: T0 + step });
        recs.push(rec);
      } else {
        const rec = recs[Math.floor(rnd() * recs.length)];
        const cur = (await kv.get<SessionRecord>(["project", P, "session", rec.session_id])).value!;
        const options = Object.keys(
          ({
            created: { activating: 1, failed: 1 },
            activating: { active: 1, failed: 1 },
            active: { ending: 1, ended: 1, ended_with_warnings: 1 },
            ending: { ended: 1, ended_with_warnings: 1 },
            ended: {},
            ended_with_warnings: {},
            failed: {},
          } as Record<SessionStatus, Record<string, number>>)[cur.status],
        ) as SessionStatus[];
        if (!options.length) continue;
        const to = options[Math.floor(rnd() * options.length)];
        const res = await transitionSession(kv, P, rec.session_id, [cur.status], to, {
          ...(to === "active" ? { started_at: T0 + step } : {}),
          ...(["ended", "ended_with_warnings", "failed"].includes(to)
            ? { ended_at: T0 + step, end_reason: "ended_by_api" as const }
            : {}),
        }, T0 + step);
        assert.ok(res.ok);
        // a transition from a status it is no longer in does nothing, index included
        const stale = await transitionSession(kv, P, rec.session_id, [cur.status], to, {}, T0 + step);
        assert.equal(stale.ok, false);
      }
      if (step % 25 === 0) await assertIndexInStep(kv, P, `at step ${step}`);
    }
    await assertIndexInStep(kv, P, "at the end");
    // an insert that is refused (the project's ceiling) writes no index entry either
    await assert.rejects(
      insertSession(kv, { ...recs[0], session_id: "session:refused", status: "created" }, 0),
    );
    await assertIndexInStep(kv, P, "after a refused insert");
  } finally {
    kv.close();
  }
});

Deno.test("list sessions: an ended session's record and entries are written with the retention as expireIn", async () => {
  const real = await Deno.openKv(":memory:");
  // Records every set of an atomic operation with its options (KV's own expiry sweep runs about once a
  // minute, too slow to wait for in a test).
  const sets: { key: Deno.KvKey; expireIn?: number }[] = [];
  const recording = (op: Deno.AtomicOperation): Deno.AtomicOperation => {
    const proxy: Deno.AtomicOperation = new Proxy(op, {
      get(o, p) {
        const v = Reflect.get(o, p, o);
        if (typeof v !== "function") return v;
        return (...args: unknown[]) => {
          if (p === "set") {
            sets.push({ key: args[0] as Deno.KvKey, expireIn: (args[2] as { expireIn?: number })?.expireIn });
          }
          const r = v.apply(o, args);
          return r === o ? proxy : r;
        };
      },
    });
    return proxy;
  };
  const kv = new Proxy(real, {
    get(target, prop) {
      if (prop === "atomic") return () => recording(target.atomic());
      const v = Reflect.get(target, prop, target);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
  try {
    const P = "proj_ttl";
    setSessionRetention(kv, 86_400_000);
    const live = await seedSession(kv, { projectId: P, status: "active", createdAt: T0 });
    const mine = (id: string) => sets.filter((s) => s.key.includes(id) && s.key[2] !== "idempotency");
    for (const s of mine(live.session_id)) {
      assert.equal(s.expireIn, undefined, `live: ${JSON.stringify(s.key)}`);
    }
    sets.length = 0;
    const ended = await transitionSession(kv, P, live.session_id, ["active"], "ended", {
      ended_at: T0 + 5,
      end_reason: "ended_by_api",
    }, T0 + 5);
    assert.ok(ended.ok);
    const written = mine(live.session_id);
    assert.equal(written.filter((s) => s.key[2] === "session").length, 1, "the record");
    assert.equal(written.filter((s) => s.key[2] === "session_index").length, 4, "its 4 entries");
    for (const s of written) assert.equal(s.expireIn, 86_400_000, `ended: ${JSON.stringify(s.key)}`);
    // kept forever when the retention is off
    setSessionRetention(kv, null);
    sets.length = 0;
    const other = await seedSession(kv, { projectId: P, status: "failed", createdAt: T0 + 9 });
    for (const s of mine(other.session_id)) assert.equal(s.expireIn, undefined);
    await assertIndexInStep(real, P);
  } finally {
    real.close();
  }
});
