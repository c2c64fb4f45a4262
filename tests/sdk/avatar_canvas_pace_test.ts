import assert from "node:assert/strict";

const { restPauseMs } = await import(new URL("../../sdk/avatar_canvas.js", import.meta.url).href);

Deno.test("restPauseMs: after each layer of the rest of the art, twice its time for the rest of the page", () => {
  assert.equal(restPauseMs(15), 30);
  assert.equal(restPauseMs(0), 0);
  // the art takes a third of the main thread at most: work / (work + pause)
  for (const work of [1, 5, 12, 30, 49]) assert.ok(work / (work + restPauseMs(work)) <= 1 / 3 + 1e-9);
});

Deno.test("restPauseMs: at most 100 ms (a layer that took long: a busy page), never negative", () => {
  assert.equal(restPauseMs(80), 100);
  assert.equal(restPauseMs(1000), 100);
  assert.equal(restPauseMs(-3), 0);
});
