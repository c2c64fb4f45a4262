/**
 * Whether the process wipes the memory it frees, read from glibc's malloc tunables.
 *
 * The service zeroes every buffer of its own that held a provider credential, but the runtime's HTTP server
 * keeps the raw request (head and JSON body) in buffers the service never sees, and frees them as they are:
 * after an ending, their bytes stay in freed malloc chunks until something reuses them. glibc overwrites a
 * chunk when it is freed if `glibc.malloc.perturb` is non-zero, and only if the chunk bypasses the
 * per-thread cache (`glibc.malloc.tcache_count=0`: the tcache hands small chunks back unscrubbed). Both are
 * read once, at process start, from `GLIBC_TUNABLES`: setting them later does nothing, so the process must be
 * started with them (`deno task start` is; docs/api.md "Provider credentials in memory").
 *
 * @module
 */

/** The tunables `deno task start` and `deno task test` start Deno with (deno.json's tasks spell them). */
export const SCRUB_TUNABLES = "glibc.malloc.perturb=165:glibc.malloc.tcache_count=0";

/**
 * Whether `tunables` (the value of `GLIBC_TUNABLES`, null when unset) makes glibc overwrite freed chunks:
 * a non-zero `glibc.malloc.perturb` and `glibc.malloc.tcache_count=0`. A later entry of the same name wins,
 * as glibc reads them.
 *
 * @example
 * ```ts
 * import { scrubsFreedMemory, SCRUB_TUNABLES } from "./memory_scrub.ts";
 * scrubsFreedMemory(SCRUB_TUNABLES); // true
 * scrubsFreedMemory("glibc.malloc.perturb=165"); // false: the tcache keeps small chunks as they were
 * ```
 */
export function scrubsFreedMemory(tunables: string | null): boolean {
  if (!tunables) return false;
  const values = new Map<string, string>();
  for (const entry of tunables.split(":")) {
    const eq = entry.indexOf("=");
    if (eq > 0) values.set(entry.slice(0, eq).trim(), entry.slice(eq + 1).trim());
  }
  const perturb = Number(values.get("glibc.malloc.perturb"));
  const tcache = values.get("glibc.malloc.tcache_count");
  return Number.isInteger(perturb) && (perturb & 0xff) !== 0 && tcache !== undefined && Number(tcache) === 0;
}

/**
 * The start-up warning of a process that runs sessions without the scrub (null when none is due): only on
 * Linux, where Deno's allocator is glibc's and the tunables apply.
 */
export function memoryScrubWarning(
  o: { os: typeof Deno.build.os; runsSessions: boolean; tunables: string | null },
): string | null {
  if (o.os !== "linux" || !o.runsSessions || scrubsFreedMemory(o.tunables)) return null;
  return `GLIBC_TUNABLES does not scrub freed memory: copies of provider credentials from the runtime's HTTP buffers can stay in this process's freed memory after their sessions. Start it as deno task start does (GLIBC_TUNABLES=${SCRUB_TUNABLES}); see docs/api.md, "Provider credentials in memory"`;
}

/** Locals of one frame of {@link scrubStack}'s recursion (the interpreter initialises them all). */
const FRAME_LOCALS = 64;

/**
 * Overwrites about `bytes` of this thread's stack below the caller by recursing through a function whose
 * frames are large (V8's interpreter writes every register of a frame when it enters it; the function is
 * made anew for each call so that it runs unoptimised, with its frames at full size). Returns the depth.
 */
export function scrubStack(bytes = 512 * 1024): number {
  // A fresh function runs unoptimised: its frames keep their full size.
  const names = Array.from({ length: FRAME_LOCALS }, (_, i) => `v${i}`);
  const deep = new Function(
    "n",
    "self",
    `${names.map((v) => `let ${v} = n;`).join("")}
    if (n <= 0) return 0;
    return 1 + self(n - 1, self) + (${names.join(" + ")}) * 0;`,
  ) as (n: number, self: unknown) => number;
  try {
    return deep(Math.ceil(bytes / (FRAME_LOCALS * 8 + 64)), deep);
  } catch {
    return -1; // the stack's limit: as deep as it goes
  }
}
