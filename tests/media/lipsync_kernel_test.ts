import assert from "node:assert/strict";
import { speechLike } from "../../testing/speech_like.ts";
import { StreamingClassifier } from "../../src/media/lipsync/classifier.ts";
import { JsFrontEnd, WasmFrontEnd } from "../../src/media/lipsync/frontend.ts";
import {
  buildWasm,
  committedWasmModuleText,
  WASM_MODULES,
  wasmModuleText,
} from "../../scripts/lipsync/build_wasm.ts";

for (const m of Object.values(WASM_MODULES)) {
  Deno.test(`lip-sync kernel: the committed WebAssembly is what scripts/lipsync/${m.wat} builds`, async () => {
    assert.equal(await committedWasmModuleText(m), wasmModuleText(m, await buildWasm(m)));
  });
}

Deno.test("lip-sync front end: the WebAssembly log-mel frames are the JavaScript ones, at every rate and chunking", () => {
  // Every common rate (resampled in WebAssembly; 16 kHz passes through), and two the WebAssembly resampler
  // does not take (an interpolated filter; above 48 kHz): JavaScript resamples those, WebAssembly analyses.
  const rates = [8000, 11025, 16000, 22050, 24000, 32000, 44100, 48000, 12345, 96000];
  for (const rate of rates) {
    const pcm = speechLike(rate, 1.5);
    const run = (front: JsFrontEnd | WasmFrontEnd, chunk: number) => {
      const out: number[][] = [];
      for (let i = 0; i < pcm.length; i += chunk) {
        front.push(pcm.subarray(i, i + chunk), (f) => out.push([...f.bands, f.energy]));
      }
      // Float input too (what the classifier's end pushes).
      front.push(new Float32Array(Math.round(rate * 0.03)), (f) => out.push([...f.bands, f.energy]));
      return { out, frames: front.frames };
    };
    const js = run(new JsFrontEnd(rate), 480);
    const wasm = run(new WasmFrontEnd(rate), 480);
    // Odd chunk sizes, and one chunk of many pieces: the same frames as the 20 ms chunks.
    const odd = run(new WasmFrontEnd(rate), 333);
    const whole = run(new WasmFrontEnd(rate), pcm.length);
    assert.ok(js.out.length >= 150, `${rate}: ${js.out.length} frames`);
    assert.equal(js.frames, js.out.length);
    for (const other of [wasm, odd, whole]) {
      assert.equal(other.out.length, js.out.length, `${rate}: frame count`);
      assert.equal(other.frames, js.frames);
    }
    let worst = 0, chunking = 0;
    for (let k = 0; k < js.out.length; k++) {
      for (let b = 0; b < js.out[k].length; b++) {
        worst = Math.max(worst, Math.abs(js.out[k][b] - wasm.out[k][b]));
        chunking = Math.max(
          chunking,
          Math.abs(wasm.out[k][b] - odd.out[k][b]),
          Math.abs(wasm.out[k][b] - whole.out[k][b]),
        );
      }
    }
    // Natural logs of band powers (≈ 5–20 here): f32 sums in another order differ by ~1e-5, more where a
    // band is near the 1e-2 floor (8 kHz: nothing above 4 kHz).
    assert.ok(worst < 2e-3, `${rate}: log-mel bands differ by up to ${worst}`);
    assert.equal(chunking, 0, `${rate}: the frames depend on the chunking`);
  }
});

Deno.test("lip-sync front end: streams share the WebAssembly scratch, even when a frame's callback feeds another stream", () => {
  const a = speechLike(24000, 1), b = speechLike(48000, 1).map((x) => -x);
  const alone = (rate: number, pcm: Int16Array) => {
    const out: number[][] = [];
    const f = new WasmFrontEnd(rate);
    for (let i = 0; i < pcm.length; i += rate / 50) {
      f.push(pcm.subarray(i, i + rate / 50), (fr) => out.push([...fr.bands, fr.energy]));
    }
    return out;
  };
  const refA = alone(24000, a), refB = alone(48000, b);
  // Stream B is fed from inside A's callbacks (each frame of A → 20 ms of B: two frames, which the module
  // writes where A's second frame of the call was), then the rest of B after.
  const fa = new WasmFrontEnd(24000), fb = new WasmFrontEnd(48000);
  const outA: number[][] = [], outB: number[][] = [];
  const takeB = (fr: { bands: Float32Array; energy: number }) => outB.push([...fr.bands, fr.energy]);
  let atB = 0;
  for (let i = 0; i < a.length; i += 480) {
    fa.push(a.subarray(i, i + 480), (fr) => {
      fb.push(b.subarray(atB, atB + 960), takeB);
      atB += 960;
      outA.push([...fr.bands, fr.energy]);
    });
  }
  for (; atB < b.length; atB += 960) fb.push(b.subarray(atB, atB + 960), takeB);
  assert.deepEqual(outA, refA);
  assert.deepEqual(outB, refB);
});

Deno.test("lip-sync kernel: the WebAssembly front end and dense layers score as the JavaScript ones", () => {
  const rate = 24000;
  const pcm = speechLike(rate, 3);
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

Deno.test("lip-sync classifier: one reset after a response scores the next exactly as a new one (WebAssembly and JavaScript, every kind of rate)", () => {
  // The viseme engine reuses one classifier per session: whatever a response left (a half-analysed window,
  // the resampler's history, the normaliser's running means, the ring of projected frames) must be gone.
  for (const useJs of [false, true]) {
    for (const rate of [24000, 16000, 12345]) {
      const first = speechLike(rate, 1.3), second = speechLike(rate + 1, 1.1).map((x) => -x);
      const score = (c: StreamingClassifier) => {
        const out: number[][] = [];
        const take = (k: number, lp: Float32Array) => out.push([k, ...lp]);
        for (let i = 0; i < second.length; i += 480) c.push(second.subarray(i, i + 480), take);
        c.end(take);
        return { out, skipped: c.skipped };
      };
      const reused = new StreamingClassifier(rate, undefined, undefined, useJs);
      // The first response is cut mid-way (not ended), with frames scored at a deadline.
      reused.push(first.subarray(0, Math.floor(first.length * 0.7)), () => {});
      reused.scoreUntil(40, () => {});
      reused.reset();
      const fresh = score(new StreamingClassifier(rate, undefined, undefined, useJs));
      assert.ok(fresh.out.length > 100, "frames scored");
      assert.deepEqual(score(reused), fresh, `${useJs ? "JavaScript" : "WebAssembly"} at ${rate} Hz`);
    }
  }
});
