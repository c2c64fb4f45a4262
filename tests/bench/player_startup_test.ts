import assert from "node:assert/strict";
import { startUpLoss } from "../../bench/player.ts";

Deno.test("startUpLoss: played as silence plus skipped, from the player's stats", () => {
  assert.deepEqual(startUpLoss({ audioUnderrunMs: 8, skippedMs: 36, framesDecoded: 0 }), {
    underrun: 8,
    skipped: 36,
    total: 44,
  });
});

Deno.test("startUpLoss: a player without those figures gives nulls, not zeros", () => {
  assert.deepEqual(startUpLoss(null), { underrun: null, skipped: null, total: null });
  assert.deepEqual(startUpLoss({ audioUnderrunMs: 3 }), { underrun: 3, skipped: null, total: null });
  assert.deepEqual(startUpLoss({ audioUnderrunMs: NaN, skippedMs: 1 }), {
    underrun: null,
    skipped: 1,
    total: null,
  });
});
