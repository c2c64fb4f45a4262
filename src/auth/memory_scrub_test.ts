import assert from "node:assert/strict";
import { memoryScrubWarning, SCRUB_TUNABLES, scrubsFreedMemory } from "./memory_scrub.ts";

Deno.test("memory scrub: perturb and no tcache, as glibc reads them", () => {
  assert.equal(scrubsFreedMemory(SCRUB_TUNABLES), true);
  assert.equal(scrubsFreedMemory(null), false);
  assert.equal(scrubsFreedMemory(""), false);
  assert.equal(scrubsFreedMemory("glibc.malloc.perturb=165"), false, "the tcache keeps small chunks");
  assert.equal(scrubsFreedMemory("glibc.malloc.tcache_count=0"), false, "no perturb: nothing written");
  assert.equal(scrubsFreedMemory("glibc.malloc.perturb=0:glibc.malloc.tcache_count=0"), false);
  assert.equal(scrubsFreedMemory("glibc.malloc.perturb=256:glibc.malloc.tcache_count=0"), false, "byte 0");
  assert.equal(scrubsFreedMemory("glibc.malloc.perturb=165:glibc.malloc.tcache_count=7"), false);
  assert.equal(
    scrubsFreedMemory("glibc.malloc.arena_max=2:glibc.malloc.tcache_count=0:glibc.malloc.perturb=1"),
    true,
    "other tunables and any order",
  );
  assert.equal(
    scrubsFreedMemory(`${SCRUB_TUNABLES}:glibc.malloc.perturb=0`),
    false,
    "the last entry of a name wins",
  );
});

Deno.test("memory scrub: the warning is for Linux processes that run sessions without it", () => {
  assert.equal(memoryScrubWarning({ os: "linux", runsSessions: true, tunables: SCRUB_TUNABLES }), null);
  assert.equal(memoryScrubWarning({ os: "linux", runsSessions: false, tunables: null }), null);
  assert.equal(memoryScrubWarning({ os: "darwin", runsSessions: true, tunables: null }), null);
  const w = memoryScrubWarning({ os: "linux", runsSessions: true, tunables: "glibc.malloc.perturb=165" });
  assert.ok(w?.includes(`GLIBC_TUNABLES=${SCRUB_TUNABLES}`), w ?? "no warning");
});
