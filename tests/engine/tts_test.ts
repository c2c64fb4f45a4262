import assert from "node:assert/strict";
import { EspeakTts, TtsError } from "../../engine/tts.ts";
import { rms } from "../../src/speech/pcm.ts";

Deno.test("tts: espeak-ng speech at the requested rate, cached", async () => {
  // A wrapper counts how often the synthesiser really runs.
  const dir = await Deno.makeTempDir();
  const counter = `${dir}/runs`;
  const wrapper = `${dir}/espeak`;
  await Deno.writeTextFile(wrapper, `#!/bin/sh\necho run >> "${counter}"\nexec espeak-ng "$@"\n`);
  await Deno.chmod(wrapper, 0o755);
  const runs = async () =>
    (await Deno.readTextFile(counter).catch(() => "")).split("\n").filter(Boolean).length;
  const tts = new EspeakTts({ command: wrapper });
  const audio = await tts.synthesize("Hello there.", 24000);
  const seconds = audio.length / 24000;
  assert.ok(seconds > 0.4 && seconds < 3, `duration ${seconds} s`);
  assert.ok(rms(audio) > 500, `rms ${rms(audio)}`);

  assert.equal(await runs(), 1);
  const again = await tts.synthesize("Hello  there. ", 24000); // same text after whitespace folding
  assert.equal(await runs(), 1, "the cached result is served without running the synthesiser");
  assert.deepEqual(again, audio);
  again[0] = 12345; // callers get copies
  assert.notEqual((await tts.synthesize("Hello there.", 24000))[0], 12345);

  const at16 = await tts.synthesize("Hello there.", 16000);
  assert.ok(Math.abs(at16.length - Math.round(audio.length * 16000 / 24000)) <= 1);
  assert.equal((await tts.synthesize("   ", 24000)).length, 0);
  await Deno.remove(dir, { recursive: true });
});
Deno.test("tts: text that looks like an option is spoken, not parsed", async () => {
  const audio = await new EspeakTts().synthesize("--version -v xx", 16000);
  assert.ok(audio.length > 16000 * 0.3);
});

Deno.test("tts: a missing synthesiser gives a clear error", async () => {
  const tts = new EspeakTts({ command: "espeak-ng-not-installed" });
  await assert.rejects(() => tts.synthesize("hi", 16000), (err) => {
    assert.ok(err instanceof TtsError);
    assert.match(err.message, /not found on PATH; install espeak-ng/);
    return true;
  });
});

Deno.test("tts: an unknown voice is reported", async () => {
  await assert.rejects(() => new EspeakTts({ voice: "xx-nonexistent" }).synthesize("hi", 16000), TtsError);
  assert.throws(() => new EspeakTts({ voice: "en; rm -rf /" }), TtsError);
});
