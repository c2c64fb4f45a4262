import assert from "node:assert/strict";

const { lowerNow } = await import(new URL("../../sdk/player_webcodecs.js", import.meta.url).href);

/** A fall with room to spare; `quiet` answers whether the sound is quiet where the skip would go. */
const decide = (o: { settling?: boolean; far?: boolean; sinceLastLower?: number; quiet?: boolean }) => {
  let asked = false;
  const lower = lowerNow({
    settling: o.settling ?? false,
    far: o.far ?? false,
    sinceLastLower: o.sinceLastLower ?? 10_000,
    quiet: () => {
      asked = true;
      return o.quiet ?? false;
    },
  });
  return { lower, asked };
};

Deno.test("lowerNow: while settling, not in speech (a viewer joining a talking avatar hears it whole)", () => {
  assert.deepEqual(decide({ settling: true, quiet: false, sinceLastLower: 100 }), {
    lower: false,
    asked: true,
  });
});

Deno.test("lowerNow: while settling, in any quiet moment (no spacing between falls)", () => {
  assert.deepEqual(decide({ settling: true, quiet: true, sinceLastLower: 100 }), {
    lower: true,
    asked: true,
  });
});

Deno.test("lowerNow: once settled, in a quiet moment at most every 500 ms", () => {
  assert.deepEqual(decide({ quiet: true, sinceLastLower: 400 }), { lower: false, asked: false });
  assert.deepEqual(decide({ quiet: true, sinceLastLower: 600 }), { lower: true, asked: true });
  assert.deepEqual(decide({ quiet: false, sinceLastLower: 600 }), { lower: false, asked: true });
});

Deno.test("lowerNow: far behind, at once, in speech too — settling or not", () => {
  assert.deepEqual(decide({ far: true, quiet: false, sinceLastLower: 0 }), { lower: true, asked: false });
  assert.deepEqual(decide({ far: true, settling: true, quiet: false }), { lower: true, asked: false });
});
