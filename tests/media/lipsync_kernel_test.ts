import assert from "node:assert/strict";
import { StreamingClassifier } from "../../src/media/lipsync/classifier.ts";
import { buildDenseWasm, denseWasmModuleText } from "../../scripts/lipsync/build_dense_wasm.ts";

Deno.test("lip-sync kernel: the committed WebAssembly is what scripts/lipsync/dense.wat builds", async () => {
  const committed = await Deno.readTextFile(
    new URL("../../src/media/lipsync/dense_wasm.ts", import.meta.url),
  );
  assert.equal(committed, denseWasmModuleText(await buildDenseWasm()));
});

Deno.test("lip-sync kernel: the WebAssembly dense layers score as the JavaScript ones", () => {
  const rate = 24000;
  const pcm = new Int16Array(rate * 3);
  let seed = 7;
  const noise = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31 - 0.5);
  for (let i = 0; i < pcm.length; i++) {
    const t = i / rate;
    // Voiced speech-like sound with syllable-rate loudness, fricative noise and pauses.
    const env = Math.max(0, Math.sin(2 * Math.PI * 2.5 * t));
    pcm[i] = Math.round(
      env * (5000 * Math.sin(2 * Math.PI * 130 * t) + 2500 * Math.sin(2 * Math.PI * 900 * t)) +
        (t % 1 > 0.8 ? 3000 * noise() : 0),
    );
  }
  const run = (useJs: boolean) => {
    const c = new StreamingClassifier(rate, undefined, undefined, useJs);
    const out: Float32Array[] = [];
    const take = (_k: number, lp: Float32Array) => out.push(lp.slice());
    for (let i = 0; i < pcm.length; i += 480) c.push(pcm.subarray(i, i + 480), take);
    c.end(take);
    return { out, skipped: c.skipped };
  };
  const js = run(true), wasm = run(false);
  assert.equal(wasm.out.length, js.out.length);
  assert.ok(js.out.length - js.skipped > 100, "the model ran on speech");
  let worst = 0;
  for (let k = 0; k < js.out.length; k++) {
    for (let v = 0; v < js.out[k].length; v++) {
      worst = Math.max(worst, Math.abs(js.out[k][v] - wasm.out[k][v]));
    }
  }
  assert.ok(worst < 1e-3, `log posteriors differ by up to ${worst}`);
});
