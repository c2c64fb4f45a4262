/** Storage moves a session only along the state table (the table itself is tested beside it). */
import assert from "node:assert/strict";
import { transitionSession } from "../../src/kv/sessions.ts";

Deno.test("state table: storage refuses a transition that is not in the table", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    await assert.rejects(
      () => transitionSession(kv, "proj_a", "session:abc", ["ended"], "active", {}, 1),
      /not in the state table/,
    );
    await assert.rejects(
      () => transitionSession(kv, "proj_a", "session:abc", ["created"], "active", {}, 1),
      /created → active/,
    );
  } finally {
    kv.close();
  }
});
