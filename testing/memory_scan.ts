/**
 * Reads another process's memory from outside (`/proc/<pid>/maps` and `/proc/<pid>/mem`: every readable
 * mapping) and finds byte strings in it, attributing each copy to the kind of memory it lives in:
 *
 * - `v8_heap`: the V8 heap — anonymous read-write mappings that no allocator of the C library owns, laid
 *   out in V8's 256 KiB-aligned pages (where JavaScript strings and objects live; ArrayBuffer contents do
 *   not: Deno allocates them with `malloc`);
 * - `malloc_main`, `malloc_thread`, `malloc_mmap`: glibc's main arena (`[heap]`), a thread arena (a 64 MiB-
 *   aligned heap whose `heap_info` header points at its arena) and a chunk of its own mapping (a large
 *   allocation: its chunk header says `IS_MMAPPED` and covers the mapping) — buffers of the runtime
 *   (hyper, rustls, Deno's ops) and JavaScript ArrayBuffer contents alike;
 * - `stack`, `file` and `other_anon` for the rest.
 *
 * Linux only; the reader must be allowed to ptrace the target (root, or the same user and the target one
 * of its descendants). {@link canScan} says whether it can.
 *
 * @module
 */

/** Where a copy lives. */
export type RegionKind =
  | "v8_heap"
  | "malloc_main"
  | "malloc_thread"
  | "malloc_mmap"
  | "stack"
  | "file"
  | "other_anon";

/** Every kind, in report order. */
export const REGION_KINDS: RegionKind[] = [
  "v8_heap",
  "malloc_main",
  "malloc_thread",
  "malloc_mmap",
  "stack",
  "file",
  "other_anon",
];

/** One copy of a needle. */
export interface Hit {
  /** The needle's name. */
  needle: string;
  address: bigint;
  region: RegionKind;
  /** The mapping's line of `/proc/<pid>/maps`. */
  mapping: string;
  /** The bytes around the copy (printable ASCII, others as `·`; every needle shown as `«name»`). */
  context: string;
  /** The 400 bytes right before the copy (fewer at the start of a read window). */
  before: Uint8Array;
  /** The 16 bytes right after the copy (fewer at the end of a mapping). */
  after: Uint8Array;
}

interface Mapping {
  start: bigint;
  end: bigint;
  perms: string;
  path: string;
  line: string;
}

const MIB = 1024n * 1024n;
const V8_PAGE = 256n * 1024n;
const HEAP_MAX = 64n * MIB;

/** Whether this process can read `pid`'s memory (Linux, permitted); a reason when it cannot. */
export function canScan(pid: number): { ok: true } | { ok: false; reason: string } {
  if (Deno.build.os !== "linux") {
    return { ok: false, reason: `memory scans need Linux (this is ${Deno.build.os})` };
  }
  try {
    const mem = Deno.openSync(`/proc/${pid}/mem`, { read: true });
    try {
      const maps = parseMaps(Deno.readTextFileSync(`/proc/${pid}/maps`));
      const first = maps.find((m) => m.perms.startsWith("r") && m.path === "[heap]") ??
        maps.find((m) => m.perms.startsWith("r"));
      if (!first) return { ok: false, reason: "no readable mapping" };
      mem.seekSync(first.start, Deno.SeekMode.Start);
      mem.readSync(new Uint8Array(16));
    } finally {
      mem.close();
    }
    return { ok: true };
  } catch (err) {
    return {
      ok: false,
      reason: `cannot read /proc/${pid}/mem (run as root, or as the same user with ptrace allowed): ${
        (err as Error).message
      }`,
    };
  }
}

function parseMaps(text: string): Mapping[] {
  const out: Mapping[] = [];
  for (const line of text.split("\n")) {
    const m = /^([0-9a-f]+)-([0-9a-f]+)\s+(\S+)\s+\S+\s+\S+\s+\S+\s*(.*)$/.exec(line.trim());
    if (!m) continue;
    out.push({
      start: BigInt(`0x${m[1]}`),
      end: BigInt(`0x${m[2]}`),
      perms: m[3],
      path: m[4],
      line: line.trim(),
    });
  }
  return out;
}

/** Bytes the last scans could not read (pages the kernel refused), for reports. */
export const unreadable = { bytes: 0 };

function readRaw(mem: Deno.FsFile, at: bigint, into: Uint8Array): number {
  mem.seekSync(at, Deno.SeekMode.Start);
  let off = 0;
  while (off < into.length) {
    const n = mem.readSync(into.subarray(off));
    if (!n) break;
    off += n;
  }
  return off;
}

/**
 * Reads `into.length` bytes at `at`; pages that cannot be read (the kernel answers EIO for some pages of a
 * mapping it lists) are read as zeros and counted in {@link unreadable}. Returns the bytes covered.
 */
function readAt(mem: Deno.FsFile, at: bigint, into: Uint8Array): number {
  try {
    return readRaw(mem, at, into);
  } catch {
    if (into.length <= 4096) {
      into.fill(0);
      unreadable.bytes += into.length;
      return into.length;
    }
    // Halve until the unreadable pages are found (page-aligned halves).
    const half = Math.max(4096, Math.floor(into.length / 2 / 4096) * 4096);
    const a = readAt(mem, at, into.subarray(0, half));
    const b = readAt(mem, at + BigInt(half), into.subarray(half));
    return a + b;
  }
}

function u64(bytes: Uint8Array, at: number): bigint {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getBigUint64(at, true);
}

/** Labels every mapping with its {@link RegionKind}. */
function classify(mem: Deno.FsFile, maps: Mapping[]): Map<Mapping, RegionKind> {
  const kinds = new Map<Mapping, RegionKind>();
  const head = new Uint8Array(32);
  const arenas = new Set<bigint>();
  // First pass: thread arenas (their first heap holds the arena itself, right after heap_info).
  for (const m of maps) {
    if (!m.perms.startsWith("rw") || m.path !== "" || m.start % HEAP_MAX !== 0n) continue;
    if (readAt(mem, m.start, head) < 32) continue;
    const arPtr = u64(head, 0), size = u64(head, 16);
    if (size > 0n && size <= HEAP_MAX && arPtr === m.start + 32n) {
      kinds.set(m, "malloc_thread");
      arenas.add(arPtr);
    }
  }
  for (const m of maps) {
    if (kinds.has(m)) continue;
    if (m.path === "[heap]") kinds.set(m, "malloc_main");
    else if (m.path === "[stack]" || m.path.startsWith("[stack")) kinds.set(m, "stack");
    else if (m.path !== "" && !m.path.startsWith("[anon")) kinds.set(m, "file");
    else if (!m.perms.startsWith("rw")) kinds.set(m, "other_anon");
    else {
      const len = m.end - m.start;
      const got = readAt(mem, m.start, head);
      const arPtr = got >= 32 ? u64(head, 0) : 0n;
      const chunk = got >= 16 ? u64(head, 8) : 0n;
      if (m.start % HEAP_MAX === 0n && arenas.has(arPtr)) kinds.set(m, "malloc_thread");
      else if (
        got >= 16 && u64(head, 0) === 0n && (chunk & 2n) === 2n && (chunk & ~7n) <= len &&
        (chunk & ~7n) > len - 4096n * 2n
      ) {
        kinds.set(m, "malloc_mmap");
      } else if (m.start % V8_PAGE === 0n && len % V8_PAGE === 0n) kinds.set(m, "v8_heap");
      else kinds.set(m, "other_anon");
    }
  }
  return kinds;
}

function contextOf(buf: Uint8Array, at: number, needles: Map<string, Uint8Array>): string {
  const from = Math.max(0, at - 160), to = Math.min(buf.length, at + 96);
  let s = "";
  for (let i = from; i < to; i++) {
    let named = false;
    for (const [name, n] of needles) {
      if (i + n.length <= buf.length && n.every((b, j) => buf[i + j] === b)) {
        s += `«${name}»`;
        i += n.length - 1;
        named = true;
        break;
      }
    }
    if (named) continue;
    const b = buf[i];
    s += b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : "·";
  }
  return s;
}

function indexOf(hay: Uint8Array, needle: Uint8Array, from: number): number {
  const first = needle[0];
  for (
    let i = hay.indexOf(first, from);
    i >= 0 && i <= hay.length - needle.length;
    i = hay.indexOf(first, i + 1)
  ) {
    let j = 1;
    while (j < needle.length && hay[i + j] === needle[j]) j++;
    if (j === needle.length) return i;
  }
  return -1;
}

/** Largest mapping read at once (bigger ones are read in windows that overlap by the longest needle). */
const WINDOW = 32 * 1024 * 1024;

/**
 * Finds every copy of every needle in `pid`'s readable memory. Needles are byte strings; name them so that
 * a report can say which credential each copy is of.
 */
export function scanProcess(pid: number, needles: Map<string, Uint8Array>): Hit[] {
  const maps = parseMaps(Deno.readTextFileSync(`/proc/${pid}/maps`));
  const mem = Deno.openSync(`/proc/${pid}/mem`, { read: true });
  const hits: Hit[] = [];
  try {
    const kinds = classify(mem, maps);
    const longest = Math.max(...[...needles.values()].map((n) => n.length));
    const buf = new Uint8Array(WINDOW + longest);
    for (const m of maps) {
      if (!m.perms.startsWith("r") || /^\[(vvar|vdso|vsyscall)/.test(m.path)) continue;
      const len = m.end - m.start;
      for (let off = 0n; off < len; off += BigInt(WINDOW)) {
        const want = Number(len - off < BigInt(WINDOW + longest) ? len - off : BigInt(WINDOW + longest));
        const got = readAt(mem, m.start + off, buf.subarray(0, want));
        if (!got) break;
        const view = buf.subarray(0, got);
        for (const [name, needle] of needles) {
          for (let i = indexOf(view, needle, 0); i >= 0; i = indexOf(view, needle, i + 1)) {
            // A copy straddling two windows is found in the first one (the window overlaps the next).
            if (BigInt(i) >= BigInt(WINDOW) && off + BigInt(WINDOW) < len) break;
            hits.push({
              needle: name,
              address: m.start + off + BigInt(i),
              region: kinds.get(m) ?? "other_anon",
              mapping: m.line,
              context: contextOf(view, i, needles),
              before: view.slice(Math.max(0, i - 400), i),
              after: view.slice(i + needle.length, i + needle.length + 16),
            });
          }
        }
      }
    }
  } finally {
    mem.close();
  }
  return hits;
}

/** Counts hits per needle and region kind. */
export function tally(hits: Hit[]): Map<string, Record<RegionKind, number>> {
  const out = new Map<string, Record<RegionKind, number>>();
  for (const h of hits) {
    const row = out.get(h.needle) ??
      Object.fromEntries(REGION_KINDS.map((k) => [k, 0])) as Record<RegionKind, number>;
    row[h.region]++;
    out.set(h.needle, row);
  }
  return out;
}
