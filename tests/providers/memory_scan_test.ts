/**
 * Measured from outside: a scan of the whole memory of the service process (every readable mapping of
 * `/proc/<pid>/mem`; testing/memory_scan.ts) for tagged canaries planted in every credential field
 * of every provider type (testing/credential_scan.ts) finds
 *
 * - while a start is held by its engine (the positive control): the credential, in use (a copy that is not
 *   the request's own JSON text: the credential holder, or the upgrade request being written);
 * - after the session ended, after a refused create, after a failed start (engine refusal, or a drop):
 *   **no copy in the V8 heap**, and no copy but the create request's own JSON text — which the runtime's
 *   HTTP server keeps in its buffers (hyper's read buffer, the body's chunk buffers; docs/api.md "Provider
 *   credentials in memory" says where and what removes them). Nothing of the bridges' own (the holder, the
 *   upgrade request, the mint's request and answer) is left.
 *
 * The same across the API → worker hand-over (an API process and a worker): no copy in either V8 heap. (Its
 * other copies — the start call's body, binary, in the runtime's HTTP buffers, often partly overwritten —
 * cannot be told apart from the bridges' own by their bytes; they are counted, and the single-process scan
 * above proves the bridges' own buffers are wiped.)
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
  runSplitScan,
  type ScanResult,
  VARIANTS,
} from "../../testing/credential_scan.ts";

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

Deno.test({
  name:
    "memory scan: no provider credential outlives its session, refused create or failed start in the JS heap, per provider type",
  ignore: skip !== null,
  async fn() {
    const results: ScanResult[] = await runCredentialScan();
    assert.equal(results.length, VARIANTS.length * POINTS.length);
    const problems: string[] = [];
    const table: string[] = [];
    for (const r of results) {
      // Copies of this variant's canaries, from this scan's scenario and the ones before it.
      const own = r.hits.filter((h) => h.needle.startsWith(`${r.variant}.`));
      const c = countByRegion(own);
      table.push(
        `${r.variant} ${r.point}: V8 ${c.v8_heap}, malloc ${
          c.malloc_main + c.malloc_thread + c.malloc_mmap
        }, other ${c.stack + c.file + c.other_anon}`,
      );
      if (r.point === "live") {
        // The positive control: the credential in use is seen, and not only as the request's JSON text.
        const current = own.filter((h) => h.needle.endsWith(".live"));
        if (!current.some((h) => !jsonText(h))) {
          problems.push(`${r.variant} live: the credential in use was not seen\n${describe(current)}`);
        }
        continue;
      }
      const inV8 = r.hits.filter((h) => h.region === "v8_heap");
      if (inV8.length) {
        problems.push(`${r.variant} ${r.point}: ${inV8.length} copies in the V8 heap\n${describe(inV8)}`);
      }
      const ours = r.hits.filter((h) => !jsonText(h));
      if (ours.length) {
        problems.push(
          `${r.variant} ${r.point}: ${ours.length} copies that are not request JSON\n${describe(ours)}`,
        );
      }
    }
    console.log(`copies per scan (this variant's canaries so far):\n${table.join("\n")}`);
    assert.equal(problems.length, 0, problems.join("\n"));
  },
});

Deno.test({
  name: "memory scan: the API → worker hand-over leaves no copy in the V8 heap of either process",
  ignore: skip !== null,
  sanitizeResources: false, // child processes' pipes are drained in the background until they exit
  sanitizeOps: false,
  async fn() {
    const results = await runSplitScan();
    const problems: string[] = [];
    const table: string[] = [];
    for (const r of results) {
      const c = countByRegion(r.hits);
      const json = r.hits.filter(jsonText).length;
      table.push(
        `${r.process} ${r.point}: V8 ${c.v8_heap}, malloc ${
          c.malloc_main + c.malloc_thread + c.malloc_mmap
        } (request JSON: ${json}; the rest: the start call's body in the runtime's HTTP buffers — fetch's on the API, the server's on the worker), other ${
          c.stack + c.file + c.other_anon
        }`,
      );
      const inV8 = r.hits.filter((h) => h.region === "v8_heap");
      if (inV8.length) {
        problems.push(`${r.process} ${r.point}: ${inV8.length} copies in the V8 heap\n${describe(inV8)}`);
      }
    }
    console.log(`copies per scan (split deployment):\n${table.join("\n")}`);
    assert.equal(problems.length, 0, problems.join("\n"));
  },
});
