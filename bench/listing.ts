/**
 * The session listing at two sizes of history (`deno task bench:api`, part 4; alone: `deno task bench:api
 * --listing-only`): one project with 100 sessions, then one with 100,000, on a KV file, and the same pages of
 * `GET /v1/sessions` timed over loopback HTTP against each (client in the service's process, one request at
 * a time). A page reads the listing index from its position on, so its cost should not depend on how many
 * sessions the project has had: the table gives both sizes side by side, their ratio, and the index entries
 * each page read.
 *
 * The sessions are written as the service writes them (the record and its 4 index entries, from
 * `session_index.ts`), 40 per atomic operation (5 keys of ~110 bytes each: KV allows 80 KiB of keys in one
 * operation), one created every 10 s: the 100,000 as a long history ({@link historyMix}: 97 % ended or
 * failed), the 100 as a young project whose filtered pages are just as full ({@link youngMix}), so each row
 * compares the same page over a history 1,000 times longer. A last row, for comparison, finds the same
 * page by reading every record of the project (3 runs; its p99 column is the slowest run), which is what a
 * listing without the index would do.
 *
 * Run: `deno task bench:api --listing-only [--listing-iterations 300] [--json FILE]`
 *
 * @module
 */
import { parseArgs } from "node:util";
import { loadConfig } from "../src/config.ts";
import { silentLogger } from "../src/log.ts";
import { compose } from "../src/app/compose.ts";
import { createApiKey } from "../src/kv/api_keys.ts";
import { sessionKey, sessionPrefix } from "../src/kv/keys.ts";
import { addIndexToOp, listSessionIndex } from "../src/kv/session_index.ts";
import type { SessionRecord } from "../src/vocabulary/session_record.ts";
import type { SessionStatus } from "../src/vocabulary/session_states.ts";
import { PROVIDER_TYPES } from "../src/providers/definitions/provider_types.ts";
import { newSessionId } from "../src/ids.ts";

const T0 = 1_780_000_000_000;
const PROJECT = "proj_bench_list";

/** One row of the result. */
export interface ListingRow {
  page: string;
  p50_ms_100: number;
  p50_ms_100k: number;
  ratio_p50: number;
  p99_ms_100: number;
  p99_ms_100k: number;
  entries_read_100: number;
  entries_read_100k: number;
  streams: number;
}

/** A session's facets: status, provider type, transport. */
type Facets = {
  status: SessionStatus;
  provider: SessionRecord["provider_type"];
  transport: SessionRecord["transport"];
};

/**
 * A long history: 80 % ended, 10 % ended with warnings, 7 % failed, 2 % active, 1 % starting, across the
 * four provider types and both transports.
 */
function historyMix(i: number): Facets {
  const r = i % 100;
  const status: SessionStatus = r < 2
    ? "active"
    : r < 3
    ? "activating"
    : r < 10
    ? "failed"
    : r < 20
    ? "ended_with_warnings"
    : "ended";
  return {
    status,
    provider: PROVIDER_TYPES[i % PROVIDER_TYPES.length],
    transport: i % 3 === 0 ? "webrtc_sfu" : "websocket_fmp4",
  };
}

/**
 * A young project: a quarter each active, starting, failed (vendor2 on webrtc_sfu) and ended (on webrtc_sfu),
 * so that every
 * filtered page of the bench is as full at 100 sessions as at 100,000 (same page, same work, only the history
 * differs).
 */
function youngMix(i: number): Facets {
  switch (i % 4) {
    case 0:
      return {
        status: "active",
        provider: PROVIDER_TYPES[i % PROVIDER_TYPES.length],
        transport: "websocket_fmp4",
      };
    case 1:
      return { status: "activating", provider: "external_engine", transport: "websocket_fmp4" };
    case 2:
      return { status: "failed", provider: "vendor2", transport: "webrtc_sfu" };
    default:
      return { status: "ended", provider: "vendor3", transport: "webrtc_sfu" };
  }
}

/** Writes `n` sessions of `PROJECT` as the service writes them, 40 per atomic operation. */
async function seed(kv: Deno.Kv, n: number, mix: (i: number) => Facets): Promise<void> {
  for (let start = 0; start < n; start += 40) {
    const op = kv.atomic();
    for (let i = start; i < Math.min(n, start + 40); i++) {
      const { status, provider, transport } = mix(i);
      const created = T0 + i * 10_000;
      const live = status === "active" || status === "activating";
      const rec: SessionRecord = {
        session_id: newSessionId(),
        project_id: PROJECT,
        status,
        provider_type: provider,
        transport,
        avatar_id: "ada",
        bg_id: "studio",
        webhook_url: null,
        created_at: created,
        started_at: status === "failed" || status === "activating" ? null : created + 900,
        ended_at: live ? null : created + 300_000,
        warning: status === "ended_with_warnings" ? "The engine did not finish in time." : null,
        error_code: status === "failed" ? "SVC_PROVIDER_UNAVAILABLE" : null,
        end_reason: live ? null : status === "failed" ? "start_failed" : "ended_by_api",
        chunks_rendered: live ? 0 : 7500,
        created_by: "svc_key_bench",
        owner: null,
      };
      op.set(sessionKey(PROJECT, rec.session_id), rec);
      addIndexToOp(op, null, rec);
    }
    const res = await op.commit();
    if (!res.ok) throw new Error("seed commit failed");
  }
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
const r3 = (x: number) => Math.round(x * 1000) / 1000;

/** The pages measured: a label, the query, and the index query it reads (for the entries count). */
function pages(n: number): { label: string; query: string; index: Parameters<typeof listSessionIndex>[2] }[] {
  const base = {
    statuses: null,
    providerType: null,
    transport: null,
    createdAfter: null,
    createdBefore: null,
    limit: 20,
    after: null,
  } as Parameters<typeof listSessionIndex>[2];
  const mid = T0 + Math.floor(n / 2) * 10_000;
  return [
    { label: "newest 20, no filter", query: "limit=20", index: base },
    { label: "newest 100, no filter", query: "limit=100", index: { ...base, limit: 100 } },
    { label: "status=active", query: "status=active", index: { ...base, statuses: ["active"] } },
    {
      label: "status=active,ending,activating",
      query: "status=active,ending,activating",
      index: { ...base, statuses: ["active", "ending", "activating"] },
    },
    {
      label: "provider_type=vendor2",
      query: "provider_type=vendor2",
      index: { ...base, providerType: "vendor2" },
    },
    {
      label: "transport=webrtc_sfu",
      query: "transport=webrtc_sfu",
      index: { ...base, transport: "webrtc_sfu" },
    },
    {
      label: "status=ended & transport=webrtc_sfu",
      query: "status=ended&transport=webrtc_sfu",
      index: { ...base, statuses: ["ended"], transport: "webrtc_sfu" },
    },
    {
      label: "status=failed & provider_type=vendor2 & transport=webrtc_sfu",
      query: "status=failed&provider_type=vendor2&transport=webrtc_sfu",
      index: { ...base, statuses: ["failed"], providerType: "vendor2", transport: "webrtc_sfu" },
    },
    {
      label: "20 created before the middle of history",
      query: `created_before=${mid}`,
      index: { ...base, createdBefore: mid },
    },
  ];
}

/** A service on its own KV file with one project of `n` sessions. */
async function setup(n: number, mix: (i: number) => Facets) {
  const dir = await Deno.makeTempDir({ prefix: "bench_list_" });
  const config = loadConfig({
    PORT: "0",
    SVC_KV: `${dir}/svc.kv`,
    SVC_REFERENCE_ENGINE: "false",
    SVC_MEDIA_ENABLED: "false",
    SVC_RATE_LIMIT_PER_MINUTE: "0",
    SVC_DEMO_PAGE: "false",
  });
  const service = await compose(config, { logger: silentLogger, lifecycle: false });
  const t0 = performance.now();
  await seed(service.kv, n, mix);
  const seedS = (performance.now() - t0) / 1000;
  const { plaintext: key } = await createApiKey(service.kv, {
    projectId: PROJECT,
    name: "bench",
    scopes: ["sessions:read"],
    now: Date.now(),
    createdBy: "bootstrap",
  });
  const headers = { authorization: `Bearer ${key}` };
  return {
    n,
    seedS,
    kv: service.kv,
    async get(q: string) {
      const res = await fetch(`${service.url}/v1/sessions?${q}`, { headers });
      const body = await res.json();
      if (res.status !== 200) throw new Error(`${q}: ${res.status} ${JSON.stringify(body)}`);
      return body as { data: unknown[]; next_cursor: string | null };
    },
    async close() {
      await service.close();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}

/**
 * Runs the listing bench at 100 and 100,000 sessions: both services run side by side in this process and
 * each page is requested from one, then the other, in turn, so both see the same machine.
 */
export async function runListingBench(options: { iterations: number; big?: number }): Promise<{
  rows: ListingRow[];
  seed_s: { small: number; big: number };
}> {
  const small = await setup(100, youngMix);
  const large = await setup(options.big ?? 100_000, historyMix);
  try {
    const rows: ListingRow[] = [];
    const smallPages = pages(small.n);
    const largePages = pages(large.n);
    for (let k = 0; k < smallPages.length; k++) {
      // The second page (through the cursor) is the one timed: a page from a position, as paging reads it.
      const second = async (svc: typeof small, query: string) => {
        const first = await svc.get(query);
        return first.next_cursor ? `${query}&cursor=${encodeURIComponent(first.next_cursor)}` : query;
      };
      const qs = await second(small, smallPages[k].query);
      const ql = await second(large, largePages[k].query);
      for (let i = 0; i < 20; i++) {
        await small.get(qs);
        await large.get(ql);
      }
      const ts: number[] = [];
      const tl: number[] = [];
      for (let i = 0; i < options.iterations; i++) {
        let t = performance.now();
        await small.get(qs);
        ts.push(performance.now() - t);
        t = performance.now();
        await large.get(ql);
        tl.push(performance.now() - t);
      }
      ts.sort((a, b) => a - b);
      tl.sort((a, b) => a - b);
      const es = (await listSessionIndex(small.kv, PROJECT, smallPages[k].index)).entriesRead;
      const pl = await listSessionIndex(large.kv, PROJECT, largePages[k].index);
      const el = pl.entriesRead;
      rows.push({
        page: smallPages[k].label,
        p50_ms_100: r3(percentile(ts, 50)),
        p50_ms_100k: r3(percentile(tl, 50)),
        ratio_p50: Math.round((percentile(tl, 50) / percentile(ts, 50)) * 100) / 100,
        p99_ms_100: r3(percentile(ts, 99)),
        p99_ms_100k: r3(percentile(tl, 99)),
        entries_read_100: es,
        entries_read_100k: el,
        streams: pl.streams,
      });
    }
    // For comparison, what the index avoids: the newest 20 active sessions found by reading every record of
    // the project (session ids are random, so the records must all be read and sorted).
    const scan = async (kv: Deno.Kv) => {
      const t = performance.now();
      const active: SessionRecord[] = [];
      let read = 0;
      for await (const e of kv.list<SessionRecord>({ prefix: sessionPrefix(PROJECT) }, { batchSize: 1000 })) {
        read++;
        if (e.value.status === "active") active.push(e.value);
      }
      active.sort((a, b) => b.created_at - a.created_at).splice(20);
      return { ms: performance.now() - t, read };
    };
    const ss: number[] = [];
    const sl: number[] = [];
    let readS = 0;
    let readL = 0;
    for (let i = 0; i < 3; i++) {
      const a = await scan(small.kv);
      const b = await scan(large.kv);
      ss.push(a.ms);
      sl.push(b.ms);
      readS = a.read;
      readL = b.read;
    }
    ss.sort((a, b) => a - b);
    sl.sort((a, b) => a - b);
    rows.push({
      page: "(what the index avoids) status=active by reading every record",
      p50_ms_100: r3(percentile(ss, 50)),
      p50_ms_100k: r3(percentile(sl, 50)),
      ratio_p50: Math.round((percentile(sl, 50) / percentile(ss, 50)) * 100) / 100,
      p99_ms_100: r3(ss.at(-1)!),
      p99_ms_100k: r3(sl.at(-1)!),
      entries_read_100: readS,
      entries_read_100k: readL,
      streams: 0,
    });
    return {
      rows,
      seed_s: { small: Math.round(small.seedS * 10) / 10, big: Math.round(large.seedS * 10) / 10 },
    };
  } finally {
    await small.close();
    await large.close();
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: { iterations: { type: "string", default: "300" }, big: { type: "string", default: "100000" } },
  });
  const { rows, seed_s } = await runListingBench({
    iterations: Number(values.iterations),
    big: Number(values.big),
  });
  console.log(
    `GET /v1/sessions, one project with 100 vs ${values.big} sessions (seeded in ${seed_s.big} s):`,
  );
  console.table(rows);
}
