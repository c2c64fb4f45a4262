/**
 * `sessions list`: the table (status, age, provider, transport, end reason), `--json` exactly the API's
 * page, `--all`, the filters as query parameters, usage errors; `--watch`: one screen redrawn in place on a
 * terminal (alternate screen, terminal given back on every way out), frames one after another elsewhere,
 * bounded by `--count`, a transient failure shown and retried, Ctrl-C a clean exit 0 — in-process and as a
 * real process receiving SIGINT.
 */
import assert from "node:assert/strict";
import type { Io } from "../../cli/io.ts";
import { run } from "../../cli/main.ts";
import { formatAge, parseTimeFlag } from "../../cli/time_flag.ts";
import { createHarness, type Harness } from "../../testing/harness.ts";
import { seedSession } from "../../testing/session_index.ts";
import { baseEnv } from "../../testing/cli.ts";
import { DEADLINE_MS } from "../../testing/deadline.ts";

const NOW = Date.now();

/** An in-process Io against the harness; records what was printed and the requests sent. */
function testIo(
  h: Harness,
  key: string,
  o: { tty?: boolean; rows?: number; fail?: (n: number) => Response | Error | null } = {},
) {
  let out = "";
  let err = "";
  const urls: URL[] = [];
  let interrupt: (() => void) | null = null;
  const io: Io = {
    stdout: (t) => void (out += t),
    stderr: (t) => void (err += t),
    stdoutIsTerminal: o.tty ?? false,
    stderrIsTerminal: false,
    noColor: true,
    env: (name) => ({ SVC_API_URL: "http://svc.test", SVC_API_KEY: key } as Record<string, string>)[name],
    readTextFile: () => Promise.reject(new Error("unused")),
    readStdin: () => Promise.resolve(""),
    fetch: (req) => {
      urls.push(new URL(req.url));
      const injected = o.fail?.(urls.length);
      if (injected instanceof Error) return Promise.reject(injected);
      if (injected) return Promise.resolve(injected);
      return h.fetch(req);
    },
    consoleSize: () => (o.tty ? { columns: 120, rows: o.rows ?? 24 } : null),
    onInterrupt(handler) {
      interrupt = handler;
      return () => (interrupt = null);
    },
  };
  return {
    io,
    get out() {
      return out;
    },
    get err() {
      return err;
    },
    urls,
    interrupt: () => interrupt?.(),
    get listening() {
      return interrupt !== null;
    },
  };
}

async function seeded(n: number): Promise<{ h: Harness; key: string; ids: string[] }> {
  const h = await createHarness({ env: { SVC_RATE_LIMIT_PER_MINUTE: "0" } });
  const key = await h.key("proj_cli_list", ["sessions:read"]);
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const rec = await seedSession(h.kv, {
      projectId: "proj_cli_list",
      status: i % 4 === 0 ? "ended" : "active",
      provider: i % 2 ? "vendor2" : "external_engine",
      createdAt: NOW - (n - i) * 60_000,
    });
    ids.unshift(rec.session_id);
  }
  return { h, key, ids };
}

Deno.test("cli sessions list: a table, exact JSON, every page, and the filters as the API's query", async () => {
  const { h, key, ids } = await seeded(27);
  try {
    const t = testIo(h, key);
    assert.equal(await run(["sessions", "list"], t.io), 0, t.err);
    const lines = t.out.trim().split("\n");
    assert.match(lines[1], /SESSION ID +│ STATUS +│ AGE +│ PROVIDER +│ TRANSPORT +│ END REASON/);
    assert.match(
      lines[2],
      new RegExp(`${ids[0]} +│ active +│ \\d+m\\d\\ds +│ external_engine +│ websocket_fmp4 +│ -`),
    );
    assert.ok(
      lines.some((l) => /│ ended +│ \d+m\d\ds +│ external_engine +│ websocket_fmp4 +│ ended_by_api/.test(l)),
    );
    assert.equal(lines.filter((l) => l.includes("session:")).length, 20, "default page: 20, one line each");
    assert.match(t.out, /^More sessions: --cursor v1\.\S+ \(or --all\)$/m);

    const json = testIo(h, key);
    assert.equal(await run(["sessions", "list", "--json", "--limit", "5"], json.io), 0);
    const page = JSON.parse(json.out);
    const api = await h.req("GET", "/v1/sessions?limit=5", { key });
    assert.deepEqual(page, api.body, "--json is the API's answer");

    const next = testIo(h, key);
    assert.equal(
      await run(["sessions", "list", "--json", "--limit", "5", "--cursor", page.next_cursor], next.io),
      0,
    );
    assert.deepEqual(
      JSON.parse(next.out).data.map((s: { session_id: string }) => s.session_id),
      ids.slice(5, 10),
    );

    const all = testIo(h, key);
    assert.equal(await run(["sessions", "list", "--all", "--json"], all.io), 0);
    const everything = JSON.parse(all.out);
    assert.deepEqual(everything.data.map((s: { session_id: string }) => s.session_id), ids);
    assert.equal(everything.next_cursor, null);

    const filtered = testIo(h, key);
    assert.equal(
      await run([
        "sessions",
        "list",
        "--status",
        "active,ending",
        "--status",
        "failed",
        "--provider",
        "vendor2",
        "--transport",
        "websocket_fmp4",
        "--created-after",
        "10m",
        "--created-before",
        String(NOW),
        "--json",
      ], filtered.io),
      0,
      filtered.err,
    );
    const q = filtered.urls[0].searchParams;
    assert.deepEqual(q.getAll("status"), ["active", "ending", "failed"]);
    assert.equal(q.get("provider_type"), "vendor2");
    assert.equal(q.get("transport"), "websocket_fmp4");
    assert.ok(Math.abs(Number(q.get("created_after")) - (Date.now() - 600_000)) < 60_000);
    assert.equal(q.get("created_before"), String(NOW));
    for (const s of JSON.parse(filtered.out).data) {
      assert.equal(s.provider_type, "vendor2");
      assert.equal(s.status, "active");
      assert.ok(s.created_at >= NOW - 11 * 60_000);
    }
  } finally {
    await h.close();
  }
});

Deno.test("cli sessions list: usage errors exit 2 without echoing values; API errors exit 1", async () => {
  const { h, key } = await seeded(2);
  try {
    for (
      const args of [
        ["--status", "runnning"],
        ["--provider", "openai"],
        ["--transport", "auto"],
        ["--created-after", "last tuesday"],
        ["--limit", "0"],
        ["--limit", "101"],
        ["--watch", "--all"],
        ["--watch", "--cursor", "x"],
        ["--watch", "--interval", "0.1"],
        ["--interval", "5"],
        ["--count", "2"],
      ]
    ) {
      const t = testIo(h, key);
      assert.equal(await run(["sessions", "list", ...args], t.io), 2, args.join(" "));
      assert.match(t.err, /^error: /);
      assert.equal(t.urls.length, 0, "nothing was sent");
    }
    const t = testIo(h, key);
    assert.equal(await run(["sessions", "list", "--cursor", "v1.forged.cursor"], t.io), 1);
    assert.match(t.err, /SVC_INVALID_REQUEST/);
  } finally {
    await h.close();
  }
});

Deno.test("cli sessions list: times and ages", () => {
  const now = Date.UTC(2026, 4, 1, 12, 0, 0);
  assert.equal(parseTimeFlag("x", "90s", now), now - 90_000);
  assert.equal(parseTimeFlag("x", "15m", now), now - 900_000);
  assert.equal(parseTimeFlag("x", "2h", now), now - 7_200_000);
  assert.equal(parseTimeFlag("x", "7d", now), now - 7 * 86_400_000);
  assert.equal(parseTimeFlag("x", "1714564800000", now), 1714564800000);
  assert.equal(parseTimeFlag("x", "2026-05-01T10:00:00Z", now), Date.UTC(2026, 4, 1, 10));
  assert.equal(parseTimeFlag("x", "2026-05-01", now), Date.UTC(2026, 4, 1));
  for (const bad of ["", "yesterday", "2026-13-45", "5 minutes", "-5m", "1e12"]) {
    assert.throws(() => parseTimeFlag("x", bad, now), /--x must be/);
  }
  assert.equal(formatAge(now - 42_000, now), "42s");
  assert.equal(formatAge(now - 307_000, now), "5m07s");
  assert.equal(formatAge(now - (3 * 3600 + 5 * 60) * 1000, now), "3h05m");
  assert.equal(formatAge(now - (2 * 86_400 + 4 * 3600) * 1000, now), "2d04h");
  assert.equal(formatAge(undefined, now), "-");
});

Deno.test("cli sessions list --watch: frames one after another off a terminal, bounded by --count", async () => {
  const { h, key } = await seeded(3);
  try {
    const t = testIo(h, key);
    assert.equal(
      await run(["sessions", "list", "--watch", "--interval", "0.5", "--count", "3"], t.io),
      0,
      t.err,
    );
    assert.equal(t.urls.length, 3);
    assert.equal(t.out.match(/^all sessions — every 0\.5 s — /gm)?.length, 3);
    assert.equal(t.out.match(/^3 session\(s\)$/gm)?.length, 3);
    assert.ok(!t.out.includes("\x1b"), "no terminal control off a terminal");
    assert.equal(t.listening, false, "the Ctrl-C handler is removed");

    const json = testIo(h, key);
    assert.equal(
      await run(["sessions", "list", "--watch", "--json", "--interval", "0.5", "--count", "2"], json.io),
      0,
    );
    const frames = json.out.trim().split("\n").filter(Boolean);
    assert.equal(frames.length, 2, "one JSON line per refresh");
    for (const f of frames) assert.equal(JSON.parse(f).data.length, 3);
  } finally {
    await h.close();
  }
});

Deno.test("cli sessions list --watch: one screen in place on a terminal; Ctrl-C gives it back and exits 0", async () => {
  const { h, key } = await seeded(30);
  try {
    const t = testIo(h, key, { tty: true, rows: 12 });
    const done = run(["sessions", "list", "--watch", "--interval", "60"], t.io);
    const until = Date.now() + DEADLINE_MS;
    while (!t.out.includes("session(s)") && !t.out.includes("newest shown")) {
      assert.ok(Date.now() < until, "first frame");
      await new Promise((r) => setTimeout(r, 10));
    }
    const started = Date.now();
    t.interrupt();
    assert.equal(await done, 0);
    assert.ok(Date.now() - started < 5000, "Ctrl-C ends the wait at once (the interval is 60 s)");
    assert.ok(t.out.startsWith("\x1b[?1049h\x1b[?25l"), "alternate screen, cursor hidden");
    assert.ok(t.out.endsWith("\x1b[?25h\x1b[?1049l"), "cursor shown, screen given back");
    assert.ok(t.out.includes("\x1b[H"), "drawn from the top");
    assert.equal(t.urls[0].searchParams.get("limit"), "6", "as many rows as fit in 12 lines");
    const frame = t.out.split("\x1b[H")[1];
    assert.ok(frame.split("\n").length <= 12, "the frame fits the screen");
    assert.match(frame, /6 newest shown; more match/);
    assert.equal(t.listening, false);
  } finally {
    await h.close();
  }
});

Deno.test("cli sessions list --watch: a transient failure is shown and retried; a refused key ends it", async () => {
  const { h, key } = await seeded(2);
  try {
    const t = testIo(h, key, { fail: (n) => (n === 2 ? new TypeError("connection reset") : null) });
    assert.equal(
      await run(["sessions", "list", "--watch", "--interval", "0.5", "--count", "3"], t.io),
      0,
      t.err,
    );
    const frames = t.out.trim().split("\n\n");
    assert.equal(frames.length, 3);
    assert.match(frames[1], /refresh failed: SDK_NETWORK_ERROR/);
    assert.match(frames[1], /2 session\(s\)/, "the last data stays on screen");
    assert.doesNotMatch(frames[2], /refresh failed/);

    const refused = testIo(h, "svc_sk_0000000000000000000000000000000000000", { tty: true });
    assert.equal(await run(["sessions", "list", "--watch", "--interval", "0.5"], refused.io), 1);
    assert.match(refused.err, /SVC_AUTH_INVALID_KEY/);
    assert.ok(refused.out.endsWith("\x1b[?25h\x1b[?1049l"), "the terminal is given back before the error");
  } finally {
    await h.close();
  }
});

Deno.test("cli sessions list --watch: a real process exits 0 on SIGINT, right after it", async () => {
  const { h, key } = await seeded(3);
  const url = h.serve();
  try {
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "cli/main.ts", "sessions", "list", "--watch", "--interval", "60"],
      cwd: new URL("../../", import.meta.url),
      clearEnv: true,
      env: { ...baseEnv(), SVC_API_URL: url, SVC_API_KEY: key },
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let out = "";
    const until = Date.now() + DEADLINE_MS;
    while (!out.includes("3 session(s)")) {
      assert.ok(Date.now() < until, `first frame: ${out}`);
      const { value, done } = await reader.read();
      if (done) break;
      out += value;
    }
    const sent = Date.now();
    child.kill("SIGINT");
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      out += value;
    }
    const status = await child.status;
    const err = new TextDecoder().decode(await new Response(child.stderr).arrayBuffer());
    assert.equal(status.code, 0, err);
    assert.ok(Date.now() - sent < 10_000, "it did not wait for the 60 s interval");
    assert.equal(err, "");
    assert.match(out, /3 session\(s\)\n\n$/, "the last frame is whole");
  } finally {
    await h.close();
  }
});
