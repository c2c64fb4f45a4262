/**
 * The SDK's `listSessions`: awaited, the first page; iterated, every page with the same filters and the
 * cursor moving on, each read only when the loop asks; statuses sent as repeated parameters; a refused query
 * rejects with the service's error; the retry policy applies to each page.
 */
import assert from "node:assert/strict";
import { ApiError, createClient, type Session, type SessionList } from "../../sdk/mod.js";
import { createHarness } from "../../testing/harness.ts";
import { seedSession } from "../../testing/session_index.ts";

const T0 = 1_780_000_000_000;

Deno.test("sdk listSessions: first page by await, every page by for await, filters kept", async () => {
  const h = await createHarness({ env: { SVC_RATE_LIMIT_PER_MINUTE: "0" } });
  try {
    const key = await h.key("proj_pages", ["sessions:read"]);
    const ids: string[] = [];
    for (let i = 0; i < 23; i++) {
      const rec = await seedSession(h.kv, {
        projectId: "proj_pages",
        status: i % 3 === 0 ? "ended" : "active",
        provider: i % 2 ? "vendor2" : "external_engine",
        createdAt: T0 + i,
      });
      ids.unshift(rec.session_id);
    }
    const sent: URL[] = [];
    const client = createClient({
      baseUrl: "http://svc.test",
      apiKey: key,
      fetch: (req) => {
        sent.push(new URL(req.url));
        return h.fetch(req);
      },
    });
    const first: SessionList = await client.listSessions({ limit: 5 });
    assert.deepEqual(first.data.map((s) => s.session_id), ids.slice(0, 5));
    assert.equal(typeof first.next_cursor, "string");
    assert.equal(sent.length, 1);

    sent.length = 0;
    const pages = client.listSessions({ status: ["active", "ending"], provider_type: "vendor2", limit: 4 });
    assert.equal(sent.length, 0, "nothing is read before it is asked for");
    const seen: Session[] = [];
    let n = 0;
    for await (const page of pages) {
      n++;
      assert.ok(page.data.length <= 4);
      seen.push(...page.data);
      assert.equal(sent.length, n, "one request per page, when the loop asks");
    }
    const expected = ids.filter((_, k) => {
      const i = 22 - k;
      return i % 3 !== 0 && i % 2 === 1;
    });
    assert.deepEqual(seen.map((s) => s.session_id), expected);
    for (const url of sent) {
      assert.deepEqual(
        url.searchParams.getAll("status"),
        ["active", "ending"],
        "statuses as repeated params",
      );
      assert.equal(url.searchParams.get("provider_type"), "vendor2");
      assert.equal(url.searchParams.get("limit"), "4");
    }
    assert.equal(sent[0].searchParams.get("cursor"), null);
    assert.ok(sent.slice(1).every((u) => u.searchParams.get("cursor")), "later pages carry the cursor");

    // breaking out of the loop reads nothing more
    sent.length = 0;
    for await (const page of client.listSessions({ limit: 2 })) {
      assert.equal(page.data.length, 2);
      break;
    }
    assert.equal(sent.length, 1);

    // awaiting and iterating the same object reads the first page once
    sent.length = 0;
    const both = client.listSessions({ limit: 10 });
    const p1 = await both;
    const all = [];
    for await (const page of both) all.push(...page.data);
    assert.deepEqual(all.slice(0, 10), p1.data);
    assert.equal(all.length, 23);
    assert.equal(sent.length, 3);

    // a refused query rejects with the service's error
    await assert.rejects(
      (async () => await client.listSessions({ limit: 500 }))(),
      (err) => err instanceof ApiError && err.code === "SVC_INVALID_REQUEST" && err.status === 400,
    );
    await assert.rejects(
      (async () => {
        for await (const _ of client.listSessions({ cursor: "v1.tampered.cursor" })) { /* nothing */ }
      })(),
      (err) => err instanceof ApiError && err.code === "SVC_INVALID_REQUEST",
    );
    // @ts-expect-error: an unknown status is a type error (and a 400)
    assert.throws(() => client.listSessions("active"), TypeError);
  } finally {
    await h.close();
  }
});

Deno.test("sdk listSessions: a page that gets a retryable error is retried under the policy", async () => {
  const h = await createHarness({ env: { SVC_RATE_LIMIT_PER_MINUTE: "0" } });
  try {
    const key = await h.key("proj_retry", ["sessions:read"]);
    await seedSession(h.kv, { projectId: "proj_retry", status: "active", createdAt: T0 });
    let calls = 0;
    const client = createClient({
      baseUrl: "http://svc.test",
      apiKey: key,
      retry: { maxAttempts: 3, sleep: () => Promise.resolve() },
      fetch: (req) => {
        calls++;
        if (calls === 1) return Promise.reject(new TypeError("connection reset"));
        return h.fetch(req);
      },
    });
    const page = await client.listSessions();
    assert.equal(page.data.length, 1);
    assert.equal(calls, 2, "a listing is safe to repeat after a network error");
  } finally {
    await h.close();
  }
});
