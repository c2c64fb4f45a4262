import assert from "node:assert/strict";

const { lowerBy, stallSeen } = await import(new URL("../../sdk/player_webcodecs.js", import.meta.url).href);

/**
 * A fall of `step` ms to spare; `room` answers how much of the sound where the skip would go is decoded and
 * quiet (ms).
 */
const decide = (
  o: { settling?: boolean; step?: number; farFor?: number | null; sinceLastLower?: number; room?: number },
) => {
  let asked = false;
  const by = lowerBy({
    settling: o.settling ?? false,
    step: o.step ?? 100,
    farFor: o.farFor ?? null,
    sinceLastLower: o.sinceLastLower ?? 10_000,
    room: () => {
      asked = true;
      return o.room ?? 0;
    },
  });
  return { by, asked };
};

Deno.test("lowerBy: while settling, not in speech (a viewer joining a talking avatar hears it whole)", () => {
  assert.deepEqual(decide({ settling: true, room: 60, sinceLastLower: 100 }), { by: 0, asked: true });
});

Deno.test("lowerBy: while settling, in any quiet moment long enough for the whole step (no spacing)", () => {
  assert.deepEqual(decide({ settling: true, room: 100, sinceLastLower: 100 }), { by: 100, asked: true });
});

Deno.test("lowerBy: once settled, in a quiet moment at most every 500 ms", () => {
  assert.deepEqual(decide({ room: 100, sinceLastLower: 400 }), { by: 0, asked: false });
  assert.deepEqual(decide({ room: 100, sinceLastLower: 600 }), { by: 100, asked: true });
  assert.deepEqual(decide({ room: 99, sinceLastLower: 600 }), { by: 0, asked: true });
});

Deno.test("lowerBy: far behind, by the quiet part (≥ 40 ms), not into speech — settling or not", () => {
  for (const settling of [false, true]) {
    assert.deepEqual(decide({ settling, step: 400, farFor: 0, room: 0, sinceLastLower: 0 }), {
      by: 0,
      asked: true,
    });
    assert.deepEqual(decide({ settling, step: 400, farFor: 500, room: 39 }), { by: 0, asked: true });
    assert.deepEqual(decide({ settling, step: 400, farFor: 500, room: 250, sinceLastLower: 0 }), {
      by: 250,
      asked: true,
    });
    assert.deepEqual(decide({ settling, step: 400, farFor: 500, room: 600 }), { by: 400, asked: true });
  }
});

Deno.test("lowerBy: far behind for a second, all of it at once, in speech too", () => {
  assert.deepEqual(decide({ step: 400, farFor: 1000, room: 0, sinceLastLower: 0 }), {
    by: 400,
    asked: false,
  });
  assert.deepEqual(decide({ settling: true, step: 400, farFor: 1500, room: 0 }), { by: 400, asked: false });
});

Deno.test("stallSeen: nothing for 200 ms of a page that was watching is a stall", () => {
  // ticks every 16 ms: the last media 201 ms ago
  assert.equal(stallSeen(1201, 1000, 1185), true);
  assert.equal(stallSeen(1199, 1000, 1183), false);
});

Deno.test("stallSeen: a busy page's late tick counts only 100 ms of its wait (its messages are queued)", () => {
  // the page held for 500 ms right after a message: the messages of that time wait behind this tick
  assert.equal(stallSeen(1510, 1000, 1010), false);
  // media already missing for 150 ms when the page was held: 150 + 100 watched
  assert.equal(stallSeen(1650, 1000, 1150), true);
  // a page ticking once a second (hidden): a stall seen once 100 ms of a tick's wait pass the 200 ms
  assert.equal(stallSeen(2000, 1000, 1000), false);
  assert.equal(stallSeen(3000, 1050, 2000), true);
});
