import assert from "node:assert/strict";

const { raiseNow } = await import(new URL("../../sdk/player_webcodecs.js", import.meta.url).href);

/** A raise found wanted `wanted` times in a row, by `by` ms; `quiet` answers whether the sound is quiet. */
const decide = (
  o: { wanted: number; by: number; mediaNeeds?: boolean; quiet?: boolean; settling?: boolean },
) => {
  let asked = false;
  const raise = raiseNow({
    settling: o.settling ?? false,
    wanted: o.wanted,
    by: o.by,
    mediaNeeds: o.mediaNeeds ?? false,
    quiet: () => {
      asked = true;
      return o.quiet ?? false;
    },
  });
  return { raise, asked };
};

Deno.test("raiseNow: while settling at once; afterwards not on one finding (a moment of lateness)", () => {
  assert.equal(decide({ settling: true, wanted: 1, by: 40 }).raise, true);
  assert.equal(decide({ wanted: 1, by: 40, mediaNeeds: true }).raise, false);
});

Deno.test("raiseNow: a jump only the animation track needs waits for the sound to be quiet", () => {
  // in speech: not now
  assert.deepEqual(decide({ wanted: 2, by: 16 }), { raise: false, asked: true });
  assert.deepEqual(decide({ wanted: 7, by: 16 }), { raise: false, asked: true });
  // quiet: now
  assert.deepEqual(decide({ wanted: 2, by: 16, quiet: true }), { raise: true, asked: true });
  // waited long enough: now, speech or not
  assert.equal(decide({ wanted: 8, by: 16 }).raise, true);
});

Deno.test("raiseNow: the sound's or the picture's own lateness, or a raise small enough to slew, does not wait", () => {
  assert.deepEqual(decide({ wanted: 2, by: 16, mediaNeeds: true }), { raise: true, asked: false });
  assert.deepEqual(decide({ wanted: 2, by: 12 }), { raise: true, asked: false });
});
