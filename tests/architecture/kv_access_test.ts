/**
 * Deno KV is read and written only through `src/kv/` (every key shape in `kv/keys.ts`, every operation in a
 * per-entity function there) and opened and closed by the composition root (`src/app/`: `compose.ts` and the
 * builders it calls, e.g. `storage.ts`): no other
 * `src/` module touches a member of a `Deno.Kv` or `Deno.AtomicOperation` value. Found by the TypeScript
 * checker (`scripts/kv_access.ts`), so a renamed variable, a field, a parameter or a destructuring is seen
 * as well as a variable called `kv`.
 */
import assert from "node:assert/strict";
import { kvAccesses } from "../../scripts/kv_access.ts";
import { filesUnder } from "../../scripts/module_graph.ts";

const ROOT = new URL("../..", import.meta.url).pathname.replace(/\/$/, "");

/** Where Deno KV may be touched directly. */
const ALLOWED = (file: string) => file.startsWith("src/kv/") || file.startsWith("src/app/");

Deno.test("kv access: no src/ module outside kv/ and the composition root touches Deno KV itself", async () => {
  const files = (await filesUnder("src")).filter((f) => f.endsWith(".ts") && !f.endsWith("_test.ts"));
  const found = await kvAccesses(ROOT, files);
  assert.deepEqual(found.filter((a) => !ALLOWED(a.split(":")[0])), []);
  // The scan sees the accesses that are allowed (it is not vacuous): the session records' functions and
  // the composition root closing the handles it opened.
  assert.ok(found.some((a) => a.startsWith("src/kv/sessions.ts:")), "src/kv/sessions.ts reads and writes KV");
  assert.ok(found.some((a) => a.startsWith("src/app/storage.ts:") && a.endsWith(" close")));
});

Deno.test("kv access: the scan finds a KV value under any name, and nothing else", async () => {
  const dir = await Deno.makeTempDir({ prefix: "kv_access_" });
  try {
    await Deno.writeTextFile(
      `${dir}/sample.ts`,
      `
const store: Deno.Kv = await Deno.openKv(":memory:");
await store.get(["a"]);
class Holder {
  constructor(readonly db: Deno.Kv) {}
  run() { return this.db.atomic().set(["b"], 1).commit(); }
}
function pass(x: Deno.Kv | null) { return x?.["list"]({ prefix: [] }); }
const { delete: remove } = store;
const later = async () => (await Deno.openKv()).enqueue(1);
const notKv = new Map<string, number>();
notKv.get("a");
notKv.set("a", 1);
new Holder(store).run(); pass(store); remove; later;
`,
    );
    const found = (await kvAccesses(dir, ["sample.ts"])).map((a) => a.replace(/:\d+:\d+/, ""));
    // In the order of the source (an outer access before the ones inside it: `….commit` before `….set`).
    assert.deepEqual(found, [
      "sample.ts get",
      "sample.ts commit",
      "sample.ts set",
      "sample.ts atomic",
      "sample.ts […]",
      "sample.ts { … } destructured",
      "sample.ts enqueue",
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
