/**
 * The session listing at two sizes of history (`deno task bench:api`, part 4; alone: `deno task bench:api
 * --listing-only`): one project with 100 sessions, then one with 100,000, on a KV file, and the same pages of
 * `GET /v1/sessions` timed over loopback HTTP against each (client in the service's process, one request at
 * a time). A page reads the listing index from its position on, so its cost should not depend on how many
 * sessions the project has had: the table gives both sizes side by side, their ratio, and the index entries
 * each page read.
 *
 * The sessions are written as the service writes them (the record and its 8 index entries, from
 * `session_index.ts`), 100 per atomic operation: 97 % ended or failed, 2 % active, 1 % starting, across the
 * four provider types and both transports, one created every 10 s.
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
import { sessionKey } from "../src/kv/keys.ts";
import { addIndexToOp, listSessionIndex } from "../src/kv/session_index.ts";
import type { SessionRecord } from "../src/sessions/record.ts";
import type { SessionStatus } from "../src/sessions/state.ts";
import { PROVIDER_TYPES } from "../src/providers/types.ts";
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
}

function statusOf(i: number): SessionStatus {
  const r = i % 100;
  if (r < 2) return "active";
  if (r < 3) return "activating";
  if (r < 10) return "failed";
  if (r < 20) return "ended_with_warnings";
  return "ended";
}

/** Writes `n` sessions of `PROJECT` as the service writes them, 100 per atomic operation. */
async function seed(kv: Deno.Kv, n: number): Promise<void> {
  for (let start = 0; start < n; start += 100) {
    const op = kv.atomic();
    for (let i = start; i < Math.min(n, start + 100); i++) {
      const status = statusOf(i);
      const created = T0 + i * 10_000;
      const live = status === "active" || status === "activating";
      const rec: SessionRecord = {
        session_id: newSessionId(),
        project_id: PROJECT,
        status,
        provider_type: PROVIDER_TYPES[i % PROVIDER_TYPES.length],
        transport: i % 3 === 0 ? "webrtc_sfu" : "websocket_fmp4",
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

/** Measures the pages at `n` sessions; returns p50, p99 and entries read per page label. */
async function measure(n: number, iterations: number) {
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
  try {
    const t0 = performance.now();
    await seed(service.kv, n);
    const seedS = (performance.now() - t0) / 1000;
    const { plaintext: key } = await createApiKey(service.kv, {
      projectId: PROJECT,
      name: "bench",
      scopes: ["sessions:read"],
      now: Date.now(),
      createdBy: "bootstrap",
    });
    const headers = { authorization: `Bearer ${key}` };
    const out = new Map<string, { p50: number; p99: number; entries: number; items: number }>();
    for (const p of pages(n)) {
      const get = async (q: string) => {
        const res = await fetch(`${service.url}/v1/sessions?${q}`, { headers });
        const body = await res.json();
        if (res.status !== 200) throw new Error(`${q}: ${res.status} ${JSON.stringify(body)}`);
        return body as { data: unknown[]; next_cursor: string | null };
      };
      const first = await get(p.query);
      // The second page (through the cursor) is the one timed: a page from a position, as paging reads it.
      const q = first.next_cursor ? `${p.query}&cursor=${encodeURIComponent(first.next_cursor)}` : p.query;
      for (let i = 0; i < 20; i++) await get(q);
      const samples: number[] = [];
      let items = 0;
      for (let i = 0; i < iterations; i++) {
        const t = performance.now();
        items = (await get(q)).data.length;
        samples.push(performance.now() - t);
      }
      samples.sort((a, b) => a - b);
      const page = await listSessionIndex(service.kv, PROJECT, p.index);
      out.set(p.label, {
        p50: percentile(samples, 50),
        p99: percentile(samples, 99),
        entries: page.entriesRead,
        items,
      });
    }
    return { seedS, pages: out };
  } finally {
    await service.close();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/** Runs the listing bench at 100 and 100,000 sessions. */
export async function runListingBench(options: { iterations: number; big?: number }): Promise<{
  rows: ListingRow[];
  seed_s: { small: number; big: number };
}> {
  const big = options.big ?? 100_000;
  const small = await measure(100, options.iterations);
  const large = await measure(big, options.iterations);
  const rows: ListingRow[] = [];
  for (const [label, s] of small.pages) {
    const l = large.pages.get(label)!;
    rows.push({
      page: label,
      p50_ms_100: r3(s.p50),
      p50_ms_100k: r3(l.p50),
      ratio_p50: Math.round((l.p50 / s.p50) * 100) / 100,
      p99_ms_100: r3(s.p99),
      p99_ms_100k: r3(l.p99),
      entries_read_100: s.entries,
      entries_read_100k: l.entries,
    });
  }
  return {
    rows,
    seed_s: { small: Math.round(small.seedS * 10) / 10, big: Math.round(large.seedS * 10) / 10 },
  };
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
