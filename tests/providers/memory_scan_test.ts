/**
 * Measured from outside: a scan of the whole memory of the service process (every readable mapping of
 * `/proc/<pid>/mem`; testing/memory_scan.ts) for tagged canaries planted in every credential field
 * of every provider type (testing/credential_scan.ts), with the service started as `deno task start` starts
 * it (deno.json's `GLIBC_TUNABLES`, which make glibc overwrite what it frees, and its Deno flags), finds
 *
 * - while a start is held by its engine (the positive control): the credential, in use (a copy that is not
 *   the request's own JSON text: the credential holder, or the upgrade request being written);
 * - after every ending — a session ended through the API, gracefully or forced, or by the join window; a
 *   start the engine dropped or refused; a create refused for an unknown field or 33 auth headers; a body
 *   that is not JSON — **no copy at all**: not in the V8 heap, not in malloc'd memory (the runtime's HTTP
 *   buffers included), not on a stack.
 *
 * The same for the split: an API process (the Deno Deploy-like sandbox) handing each start to a worker, both
 * scanned.
 *
 * The scanner's own positive control comes first: in a probe process, a JavaScript string is found in the
 * V8 heap and a Uint8Array's bytes in malloc'd memory.
 *
 * Linux only, as root or the same user with ptrace allowed; skipped with a message elsewhere.
 */
import assert from "node:assert/strict";
import { canScan, type Hit, scanProcess } from "../../testing/memory_scan.ts";
import {
  countByRegion,
  POINTS,
  runCredentialScan,
  type ScanOptions,
  type ScanResult,
  VARIANTS,
} from "../../testing/credential_scan.ts";
import { startTaskLaunch } from "../../testing/start_task.ts";

/** Whether this host can scan a child process (a reason when it cannot). */
async function scannable(): Promise<string | null> {
  if (Deno.build.os !== "linux") return `memory scan skipped: it needs Linux (this is ${Deno.build.os})`;
  const child = new Deno.Command(Deno.execPath(), { args: ["eval", "setTimeout(() => {}, 30000)"] }).spawn();
  try {
    await new Promise((r) => setTimeout(r, 200));
    const ok = canScan(child.pid);
    return ok.ok ? null : `memory scan skipped: ${ok.reason}`;
  } finally {
    child.kill();
    await child.status;
  }
}

const skip = await scannable();
if (skip) console.warn(skip);

const QUOTE = 0x22;

/**
 * A copy that is the create request's own JSON text: the canary sits inside a JSON string there (a quote
 * right after it), or — where the bytes after it were overwritten since — the printable text right before
 * it is JSON (`":"`). What the bridges write has neither: header lines (`Name: value`), a request line, the
 * holder's length-prefixed fields.
 */
function jsonText(h: Hit): boolean {
  if (h.after.length > 0 && h.after[0] === QUOTE) return true;
  let start = h.before.length;
  while (start > 0 && h.before[start - 1] >= 0x20 && h.before[start - 1] < 0x7f) start--;
  return new TextDecoder().decode(h.before.subarray(start)).includes('":"');
}

function describe(hits: Hit[]): string {
  return hits.map((h) => `  ${h.needle} [${h.region}] ${h.context.slice(40, 260)}`).join("\n");
}

Deno.test({
  name:
    "memory scan: the scanner sees a JavaScript string in the V8 heap and an array's bytes in malloc'd memory",
  ignore: skip !== null,
  async fn() {
    const asString = `str${crypto.randomUUID().replaceAll("-", "")}`;
    const asBytes = `buf${crypto.randomUUID().replaceAll("-", "")}`;
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", new URL("../fixtures/memory_probe.ts", import.meta.url).pathname],
      stdin: "piped",
      stdout: "piped",
    }).spawn();
    const writer = child.stdin.getWriter();
    const reader = child.stdout.getReader();
    try {
      await writer.write(new TextEncoder().encode(`${asString}\n${asBytes}\n`));
      await reader.read(); // "ready"
      const hits = scanProcess(
        child.pid,
        new Map([["string", new TextEncoder().encode(`<${asString}>`)], [
          "bytes",
          new TextEncoder().encode(asBytes),
        ]]),
      );
      const str = countByRegion(hits, (n) => n === "string");
      const bytes = countByRegion(hits, (n) => n === "bytes");
      assert.ok(str.v8_heap >= 1, `the string in the V8 heap: ${JSON.stringify(str)}`);
      assert.ok(
        bytes.malloc_main + bytes.malloc_thread + bytes.malloc_mmap >= 1,
        `the bytes in malloc: ${JSON.stringify(bytes)}`,
      );
    } finally {
      child.kill();
      await child.status;
      await writer.close().catch(() => {});
      reader.releaseLock();
      await child.stdout.cancel().catch(() => {});
    }
  },
});

/**
 * The audit of one deployment, run as `deno task start` runs the service (its `GLIBC_TUNABLES` and Deno
 * flags, read from deno.json): the credential in use is seen while a start is held (the positive control),
 * and after every ending — a session ended gracefully, forced or by the join window, a dropped or refused
 * start, a create refused for an unknown field, for 33 headers or for a body that is not JSON — **no copy
 * of any credential is left anywhere in the process**, not in the V8 heap, malloc'd memory or a stack. A
 * scan that still sees one tries again for up to 15 s: the runtime frees a connection's buffers a moment
 * after the client has read the answer.
 */
async function auditAsStarted(deployment: ScanOptions["deployment"]): Promise<void> {
  const launch = await startTaskLaunch();
  const results: ScanResult[] = await runCredentialScan({
    deployment,
    env: launch.env,
    flags: launch.flags,
    settleMs: 15_000,
  });
  const processes = deployment === "split" ? 2 : 1;
  assert.equal(results.length, VARIANTS.length * POINTS.length * processes);
  const problems: string[] = [];
  const table: string[] = [];
  for (const variant of VARIANTS) {
    const live = results.filter((r) => r.variant === variant && r.point === "live");
    // The positive control: the credential in use is seen, and not only as the request's JSON text.
    const current = live.flatMap((r) => r.hits.filter((h) => h.needle.startsWith(`${variant}.`)))
      .filter((h) => h.needle.endsWith(".live"));
    if (!current.some((h) => !jsonText(h))) {
      problems.push(`${variant} live: the credential in use was not seen\n${describe(current)}`);
    }
  }
  for (const r of results) {
    const c = countByRegion(r.hits);
    table.push(
      `${r.process} ${r.variant} ${r.point}: V8 ${c.v8_heap}, malloc ${
        c.malloc_main + c.malloc_thread + c.malloc_mmap
      }, stack ${c.stack}, other ${c.file + c.other_anon}`,
    );
    if (r.point !== "live" && r.hits.length) {
      problems.push(`${r.process} ${r.variant} ${r.point}: ${r.hits.length} copies\n${describe(r.hits)}`);
    }
  }
  console.log(`copies per scan (every canary planted so far):\n${table.join("\n")}`);
  assert.equal(problems.length, 0, problems.join("\n"));
}

Deno.test({
  name:
    "memory scan: started as deno task start, no copy of a provider credential is left after any ending, per provider type",
  ignore: skip !== null,
  fn: () => auditAsStarted("single"),
});

Deno.test({
  name:
    "memory scan: the API and the worker of the split, started as deno task start, keep no copy after any ending",
  ignore: skip !== null,
  sanitizeResources: false, // child processes' pipes are drained in the background until they exit
  sanitizeOps: false,
  fn: () => auditAsStarted("split"),
});
