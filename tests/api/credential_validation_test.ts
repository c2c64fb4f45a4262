/**
 * The credential fields are read from the body's bytes and the schema sees stand-ins in their place
 * (src/providers/definitions/credential_reader.ts): the answers must be exactly what they were when the schema read the
 * values themselves. Thousands of generated bodies (testing/credential_bodies.ts: every credential
 * field malformed in every way, and valid) go through this checkout; each answer (status, code, message)
 * must equal the one recorded from the main branch before the change
 * (tests/fixtures/credential_validation_answers.json, by tests/fixtures/record_validation_answers.ts).
 */
import assert from "node:assert/strict";
import { bodiesDigest, generateBodies } from "../../testing/credential_bodies.ts";
import { type Answer, answersFor } from "../../testing/validation_answers.ts";
import { createHarness } from "../../testing/harness.ts";
import { UnavailableBridge } from "../../testing/unavailable_bridge.ts";

/** The generator's seed and the number of bodies (the recorded answers are for these). */
export const SEED = 23;
export const BODY_COUNT = 10000;

Deno.test("credential validation: thousands of generated bodies get exactly the answers main gave them", async () => {
  const recorded = JSON.parse(
    await Deno.readTextFile(new URL("../fixtures/credential_validation_answers.json", import.meta.url)),
  ) as { seed: number; count: number; digest: string; answers: Answer[]; index: number[] };
  const bodies = generateBodies(SEED, BODY_COUNT);
  assert.equal(recorded.seed, SEED);
  assert.equal(recorded.count, BODY_COUNT);
  assert.equal(
    await bodiesDigest(bodies),
    recorded.digest,
    "the generator changed: record the answers of main again (tests/fixtures/record_validation_answers.ts)",
  );
  const answers = await answersFor({ createHarness, UnavailableBridge }, bodies);
  const differ: string[] = [];
  answers.forEach((a, i) => {
    const want = recorded.answers[recorded.index[i]];
    if (JSON.stringify(a) !== JSON.stringify(want)) {
      differ.push(
        `#${i} ${JSON.stringify(new TextDecoder().decode(bodies[i]).slice(0, 600))}\n  main: ${
          JSON.stringify(want)
        }\n  now:  ${JSON.stringify(a)}`,
      );
    }
  });
  // Every kind of answer of the contract's validation is among them (the generator reaches them).
  const codes = new Set(answers.map((a) => `${a[0]} ${a[1]}`));
  for (
    const c of ["400 SVC_PROVIDER_MISCONFIGURED", "400 SVC_INVALID_REQUEST", "503 SVC_PROVIDER_UNAVAILABLE"]
  ) {
    assert.ok(codes.has(c), `no ${c} among the answers`);
  }
  assert.equal(
    differ.length,
    0,
    `${differ.length} of ${bodies.length} answers differ:\n${differ.slice(0, 8).join("\n")}`,
  );
});
