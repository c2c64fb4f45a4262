/**
 * The streaming viseme engine: `deno task lipsync`'s output, the source chosen for each kind of knowledge,
 * the look-ahead bound, words arriving late or never, transcripts in deltas, barge-in, the model against
 * the training script's outputs, and a floor on accuracy (espeak-ng voices the classifier never trained
 * on; the full measurement is `deno task bench:lipsync`).
 */
import assert from "node:assert/strict";
import { EspeakLib } from "../../src/speech/espeak_lib.ts";
import { encodeWav } from "../../engine/wav.ts";
import { espeakUtterance, frameLabels, type Utterance } from "../../bench/lipsync/corpus.ts";
import { ratios, score } from "../../bench/lipsync/score.ts";
import { StreamingClassifier } from "../../src/media/lipsync/classifier.ts";
import { MEL_BANDS, StreamResampler } from "../../src/media/lipsync/dsp.ts";
import {
  DECISION_DELAY_MS,
  LOOKAHEAD_MS,
  VisemeEngine,
  type VisemeFrame,
} from "../../src/media/lipsync/viseme_engine.ts";
import { lipSyncRecording } from "../../src/media/lipsync/offline.ts";
import { SessionFace } from "../../src/media/lipsync/session_face.ts";
import { isViseme, VISEME_INDEX, VISEMES } from "../../src/media/lipsync/visemes.ts";
import { phonemeVisemes } from "../../src/media/lipsync/visemes.ts";
import { baseEnv } from "../../testing/cli.ts";
import { loadArtBank } from "../../src/media/art_bank.ts";
import { blendPose, VISEME_POSES } from "../../src/media/art/mouth.ts";
import { CATALOG } from "../../src/media/catalog.ts";

const lib = EspeakLib.open();
const SENTENCE = "Bob made a map of the big pub, maybe five; then Pam paused.";
/** A voice of the bench split (never trained on, never tuned on). */
const speak = (text = SENTENCE, voice = "en-us+m8", lang = "en"): Utterance =>
  espeakUtterance(lib, "t", text, { voice, rate: 170 }, lang);

function run(args: string[]) {
  return new Deno.Command(Deno.execPath(), {
    args: ["task", "--quiet", "lipsync", ...args],
    cwd: new URL("../../", import.meta.url),
    clearEnv: true,
    env: baseEnv(),
    stdout: "piped",
    stderr: "piped",
  }).output();
}

function checkSpans(spans: unknown, durationMs: number): void {
  assert.ok(Array.isArray(spans) && spans.length > 0, "a non-empty JSON array");
  let at = 0;
  for (const s of spans as { start_ms: number; end_ms: number; viseme: string }[]) {
    assert.deepEqual(Object.keys(s).sort(), ["end_ms", "start_ms", "viseme"]);
    assert.equal(s.start_ms, at, "contiguous, non-overlapping");
    assert.ok(s.end_ms > s.start_ms, "each span has a length");
    assert.ok(isViseme(s.viseme), `a viseme name: ${s.viseme}`);
    at = s.end_ms;
  }
  assert.equal(at, Math.round(durationMs), "covers the whole file");
}

Deno.test("lipsync CLI: one JSON array of contiguous spans over the whole file, for audio, --text and --words, at 8 and 48 kHz", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const u = speak();
    const durMs = u.samples.length * 1000 / u.sampleRate;
    await Deno.writeFile(`${dir}/a.wav`, encodeWav(u.samples, u.sampleRate));
    await Deno.writeTextFile(`${dir}/a.txt`, u.text);
    await Deno.writeTextFile(`${dir}/a.json`, JSON.stringify(u.words));
    for (const extra of [[], ["--text", `${dir}/a.txt`], ["--words", `${dir}/a.json`, "--lang", "en"]]) {
      const out = await run(["--audio", `${dir}/a.wav`, ...extra, "--json"]);
      assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
      const text = new TextDecoder().decode(out.stdout).trim();
      assert.ok(!text.includes("\n"), "exactly one line of JSON on stdout");
      checkSpans(JSON.parse(text), durMs);
    }
    for (const rate of [8000, 48000]) {
      const pcm = Int16Array.from(
        new StreamResampler(u.sampleRate, rate).process(u.samples),
        (x) => Math.round(x),
      );
      await Deno.writeFile(`${dir}/r.wav`, encodeWav(pcm, rate));
      const out = await run(["--audio", `${dir}/r.wav`, "--json"]);
      assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
      checkSpans(JSON.parse(new TextDecoder().decode(out.stdout)), pcm.length * 1000 / rate);
    }
    // Usage and input errors: a message on stderr, nothing on stdout.
    const usage = await run(["--json"]);
    assert.equal(usage.code, 2);
    assert.match(new TextDecoder().decode(usage.stderr), /--audio/);
    const both = await run(["--audio", `${dir}/a.wav`, "--text", `${dir}/a.txt`, "--words", `${dir}/a.json`]);
    assert.equal(both.code, 2);
    const notWav = await run(["--audio", `${dir}/a.txt`, "--json"]);
    assert.equal(notWav.code, 1);
    assert.equal(new TextDecoder().decode(notWav.stdout), "");
    await Deno.writeTextFile(`${dir}/bad.json`, `[{"word":"hi","start_ms":"soon"}]`);
    const badWords = await run(["--audio", `${dir}/a.wav`, "--words", `${dir}/bad.json`, "--json"]);
    assert.equal(badWords.code, 1);
    assert.match(new TextDecoder().decode(badWords.stderr), /entry 0/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("lip sync sources: audio alone without knowledge, the transcript when given, word timings over the transcript", () => {
  const u = speak();
  const base = { samples: u.samples, sampleRate: u.sampleRate, lang: "en" };
  assert.equal(lipSyncRecording(base).source, "audio");
  assert.equal(lipSyncRecording({ ...base, text: u.text }).source, "text");
  assert.equal(lipSyncRecording({ ...base, words: u.words }).source, "words");
  // Both given: the timing wins.
  const frames: VisemeFrame[] = [];
  const engine = new VisemeEngine({ sampleRate: u.sampleRate, onFrame: (f) => frames.push(f) });
  engine.startResponse("r");
  engine.text(u.text);
  engine.words(u.words);
  engine.audio(u.samples);
  engine.endResponse();
  assert.equal(engine.history.at(-1)!.source, "words");
  // Without a text-to-phoneme converter every response is audio alone.
  assert.equal(lipSyncRecording({ ...base, text: u.text, g2p: null }).source, "audio");
});

Deno.test("lip sync look-ahead: no frame waits for more than 80 ms of audio after its start", () => {
  const u = speak();
  for (const chunkMs of [20, 1]) {
    for (const knowledge of ["audio", "text", "words"] as const) {
      let pushedMs = 0;
      let worst = 0;
      let decided = 0;
      const engine = new VisemeEngine({
        sampleRate: u.sampleRate,
        onFrame: (f) => {
          worst = Math.max(worst, pushedMs - f.frame * 10);
          decided++;
        },
      });
      engine.startResponse("r");
      if (knowledge === "text") engine.text(u.text, { final: true });
      const words = [...u.words];
      const chunk = Math.round(u.sampleRate * chunkMs / 1000);
      for (let at = 0; at < u.samples.length; at += chunk) {
        const n = Math.min(chunk, u.samples.length - at);
        // Words arrive with the audio they start in.
        if (knowledge === "words") {
          const due = words.filter((w) => w.start_ms < (at + n) * 1000 / u.sampleRate);
          if (due.length) engine.words(words.splice(0, due.length));
        }
        pushedMs = (at + n) * 1000 / u.sampleRate;
        engine.audio(u.samples.subarray(at, at + n));
      }
      assert.ok(worst <= LOOKAHEAD_MS, `${knowledge}, ${chunkMs} ms chunks: a frame waited for ${worst} ms`);
      // In 1 ms pieces the wait is what the engine needs (plus the resampler's half filter and a piece).
      if (chunkMs === 1) assert.ok(worst <= DECISION_DELAY_MS + 2, `${knowledge}: ${worst} ms`);
      const durFrames = Math.floor(u.samples.length * 100 / u.sampleRate);
      assert.ok(decided >= durFrames - 8, `frames decided while streaming: ${decided} of ${durFrames}`);
    }
  }
  // The CLI's driver keeps its 20 ms chunks on the grid at rates where 20 ms is not a whole number of samples.
  for (const rate of [11025, 12345, 44100]) {
    const pcm = Int16Array.from(
      new StreamResampler(u.sampleRate, rate).process(u.samples),
      (x) => Math.round(x),
    );
    const r = lipSyncRecording({ samples: pcm, sampleRate: rate, g2p: null });
    assert.ok(r.maxLookaheadMs <= LOOKAHEAD_MS, `${rate} Hz: ${r.maxLookaheadMs} ms`);
  }
});

Deno.test("lip sync classifier: the same audio gives the same scores however it is chunked (1 sample to 100 ms)", () => {
  const u = speak();
  const scores = (chunk: number) => {
    const c = new StreamingClassifier(u.sampleRate);
    const out: number[][] = [];
    for (let at = 0; at < u.samples.length; at += chunk) {
      c.push(u.samples.subarray(at, at + chunk), (k, lp) => (out[k] = [...lp]));
    }
    return out;
  };
  const ref = scores(1);
  // 100 ms pushes complete ten frames at once (a vendor's chunk): each must still see its whole context.
  for (const ms of [10, 20, 100]) {
    const got = scores(Math.round(u.sampleRate * ms / 1000));
    assert.equal(got.length, ref.length, `${ms} ms chunks: frames scored`);
    let worst = 0;
    for (let k = 0; k < ref.length; k++) {
      for (let v = 0; v < ref[k].length; v++) worst = Math.max(worst, Math.abs(got[k][v] - ref[k][v]));
    }
    assert.ok(worst < 1e-4, `${ms} ms chunks: scores differ from 1-sample pushes by up to ${worst}`);
  }
});

Deno.test("lip sync deadline: a bound on the look-ahead decides each frame once, in order, with no more audio past its start; 80 ms is the default's own", () => {
  const u = speak();
  for (const knowledge of ["audio", "words"] as const) {
    const input = {
      samples: u.samples,
      sampleRate: u.sampleRate,
      lang: "en",
      words: knowledge === "words" ? u.words : undefined,
    };
    const full = lipSyncRecording(input);
    assert.deepEqual(lipSyncRecording({ ...input, lookaheadMs: 80 }).frames, full.frames, knowledge);
    for (const bound of [0, 20, 40]) {
      const r = lipSyncRecording({ ...input, lookaheadMs: bound });
      assert.equal(r.frames.length, full.frames.length);
      // A frame is never decided before some of its own audio is analysed: the response's first frame
      // waits for about 20 ms of audio whatever the bound.
      assert.ok(
        r.maxLookaheadMs <= Math.max(bound, 20),
        `${knowledge} at ${bound} ms: a frame had ${r.maxLookaheadMs} ms`,
      );
      assert.equal(r.source, knowledge);
    }
  }
  assert.throws(() => lipSyncRecording({ samples: u.samples, sampleRate: u.sampleRate, lookaheadMs: 25 }));
  // The engine itself: frames decided early come out once each, in order, and the rest follow as usual.
  const frames: VisemeFrame[] = [];
  const engine = new VisemeEngine({ sampleRate: u.sampleRate, g2p: null, onFrame: (f) => frames.push(f) });
  engine.startResponse("r");
  const chunk = Math.round(u.sampleRate / 50);
  let early = 0;
  for (let at = 0; at < u.samples.length; at += chunk) {
    engine.audio(u.samples.subarray(at, at + chunk));
    // Every 60 ms the frames up to the audio pushed are due at once (no look-ahead at all).
    if ((at / chunk) % 3 === 2) {
      early += engine.decideUntil("r", Math.floor((at + chunk) * 100 / u.sampleRate));
    }
  }
  engine.endResponse();
  assert.ok(early > 0, "frames were decided at their deadline");
  assert.deepEqual(frames.map((f) => f.frame), frames.map((_, i) => i), "each frame once, in order");
  const stats = engine.history.at(-1)!;
  assert.equal(stats.deadline.frames, early);
  // Decided every 60 ms from the audio there: 10 to 60 ms of look-ahead each.
  assert.ok(stats.deadline.lookaheadMs !== null && stats.deadline.lookaheadMs <= 60, JSON.stringify(stats));
  assert.equal(engine.decideUntil("r", 10_000), 0, "nothing after the response");
});

Deno.test("lip sync face: speech still queued shows its mouth where it will play, decided at the frame's deadline; written speech replaces it", () => {
  const u = speak();
  const pcm = Int16Array.from(new StreamResampler(u.sampleRate, 24000).process(u.samples), Math.round);
  const face = new SessionFace({
    engineRate: 24000,
    timelineRate: 48000,
    inputRate: 24000,
    seed: 1,
    g2p: null,
    now: () => 0,
  });
  face.responseStarted("r");
  // 300 ms of the response arrived; its first 100 ms are written at timeline 1 s, the rest is queued.
  face.audio(pcm.subarray(0, 7200), "r");
  face.placed("r", 0, 48000, 4800);
  face.timeline.written(48000 + 4800);
  const frameAt = (ms: number) => face.timeline.responseFrameAt(ms);
  assert.equal(frameAt(1150), null, "nothing known past the written speech");
  face.timeline.queued({ responseId: "r", from: 4800, at: 48000 + 4800, n: 9600 });
  assert.deepEqual(frameAt(1150), { responseId: "r", frame: 15 }, "queued speech, where it will play");
  assert.equal(frameAt(1310), null, "past the queued speech");
  // The frame showing 1150 is rendered: the queued speech there is decided (the frame is its deadline) and
  // the face speaks, not the rest pose.
  const state = face.faceAt(1150);
  assert.equal(face.timeline.speakingAt(1150), true);
  assert.notEqual(face.timeline.targetAt(1150), -1, "decided by the frame");
  assert.ok(state.mode === "speaking", state.mode);
  // Written, the speech's real placement wins; without a queue nothing is assumed.
  face.placed("r", 4800, 48000 + 4800, 9600);
  face.timeline.queued(null);
  assert.deepEqual(frameAt(1150), { responseId: "r", frame: 15 });
  face.timeline.queued(null);
  assert.equal(frameAt(1400), null);
});

Deno.test("lip sync session state: a session's later responses are lip-synced as its first (the same audio gives the same visemes as the 12th response)", () => {
  const ah = espeakUtterance(lib, "ah", "Ah, what a day.", { voice: "en-us", rate: 160 }, "en");
  const frames: string[][] = [];
  const engine = new VisemeEngine({
    sampleRate: ah.sampleRate,
    g2p: null,
    onFrame: (f) => ((frames[Number(f.responseId)] ??= [])[f.frame] = f.viseme),
  });
  const chunk = Math.round(ah.sampleRate / 50);
  for (let r = 0; r < 12; r++) {
    engine.startResponse(String(r));
    for (let at = 0; at < ah.samples.length; at += chunk) engine.audio(ah.samples.subarray(at, at + chunk));
    engine.endResponse();
  }
  // Normalisation carried over the session drifted to these sounds: the 12th "Ah" began as a pause.
  assert.deepEqual(frames[11], frames[0]);
  assert.ok(frames[0].slice(0, 40).includes("aa"), frames[0].slice(0, 40).join(" "));
});

Deno.test("lip sync words: late words take over from their arrival, words that never come leave the audio alone", () => {
  const u = speak();
  const run = (late: number | null) => {
    const frames: VisemeFrame[] = [];
    const engine = new VisemeEngine({ sampleRate: u.sampleRate, onFrame: (f) => frames.push(f) });
    engine.startResponse("r");
    const chunk = Math.round(u.sampleRate / 50);
    for (let at = 0; at < u.samples.length; at += chunk) {
      // All the words arrive at once, `late` ms into the audio (after many of them were spoken).
      if (late !== null && at * 1000 / u.sampleRate >= late && engine.history.length === 0) {
        engine.words(u.words);
        late = null;
      }
      engine.audio(u.samples.subarray(at, at + chunk));
    }
    engine.endResponse();
    return frames;
  };
  const never = run(null);
  assert.ok(never.every((f) => f.source === "audio"));
  const late = run(1500);
  const firstWords = late.findIndex((f) => f.source === "words");
  assert.ok(firstWords > 100, `frames before the words arrived stay audio (first words frame ${firstWords})`);
  assert.ok(late.slice(0, firstWords).every((f) => f.source === "audio"));
  // Frames decided before the words came are the same as with no words at all.
  for (let k = 0; k < firstWords; k++) assert.equal(late[k].viseme, never[k].viseme);
  assert.ok(late.filter((f) => f.source === "words").length > 100, "the rest follows the words");
  assert.equal(late.length, never.length, "one frame per 10 ms either way");
});

Deno.test("lip sync transcript: deltas cut anywhere give the same mouth as the whole text", () => {
  const u = speak();
  const whole = lipSyncRecording({ samples: u.samples, sampleRate: u.sampleRate, text: u.text, lang: "en" });
  // Deltas of 3 characters, cutting words, all arriving before the audio they describe.
  const deltas: { atMs: number; text: string }[] = [];
  for (let i = 0; i < u.text.length; i += 3) deltas.push({ atMs: i * 20, text: u.text.slice(i, i + 3) });
  const streamed = lipSyncRecording({
    samples: u.samples,
    sampleRate: u.sampleRate,
    textDeltas: deltas,
    lang: "en",
  });
  assert.equal(streamed.source, "text");
  let same = 0;
  for (let k = 0; k < whole.frames.length; k++) if (whole.frames[k] === streamed.frames[k]) same++;
  assert.ok(same / whole.frames.length > 0.9, `agreement ${(same / whole.frames.length).toFixed(3)}`);
});

Deno.test("lip sync barge-in: a response cut mid-word emits nothing more and the mouth closes; the next starts clean", () => {
  const u = speak();
  const face = new SessionFace({
    engineRate: u.sampleRate,
    timelineRate: 48000,
    inputRate: 24000,
    seed: 1,
    now: () => 0,
  });
  face.responseStarted("r_1");
  face.words("r_1", u.words);
  const chunk = Math.round(u.sampleRate / 50);
  // Half the response arrives, and is placed on the timeline from 0 (48 kHz samples).
  const half = Math.floor(u.samples.length / 2);
  for (let at = 0; at < half; at += chunk) {
    face.audio(u.samples.subarray(at, Math.min(half, at + chunk)), "r_1");
  }
  const placed = Math.floor(half * 48000 / u.sampleRate) - 48000 * 0.2;
  face.placed("r_1", 0, 0, placed);
  const cutMs = placed / 48;
  // Mid-word, the mouth is not at rest.
  const speaking = [...Array(20).keys()].map((i) =>
    face.faceAt(cutMs - 400 + i * 20).visemes[VISEME_INDEX.sil]
  );
  assert.ok(speaking.some((w) => w < 0.5), "the mouth moves while the response plays");
  face.interrupt("r_1");
  // Late audio of the cut response is ignored; nothing more is decided for it.
  const before = face.stats().responses.length;
  face.audio(u.samples.subarray(half, half + chunk), "r_1");
  assert.equal(face.engine.responseId, null);
  assert.equal(face.stats().responses.length, before);
  assert.ok(face.stats().responses.at(-1)!.interrupted);
  // Right after the cut the mouth is at rest.
  const after = face.faceAt(cutMs + 100);
  assert.ok(after.visemes[VISEME_INDEX.sil] > 0.99, `sil weight ${after.visemes[VISEME_INDEX.sil]}`);
  // The next response starts from its own frame 0 with its own knowledge.
  const frames: string[] = [];
  face.subscribe(() => {});
  face.responseStarted("r_2");
  for (let at = 0; at < u.samples.length; at += chunk) face.audio(u.samples.subarray(at, at + chunk), "r_2");
  face.responseDone("r_2");
  const last = face.stats().responses.at(-1)!;
  assert.equal(last.responseId, "r_2");
  assert.equal(last.source, "audio", "no words of the cut response carry over");
  assert.ok(last.frames.audio >= Math.ceil(u.samples.length * 100 / u.sampleRate), "every 10 ms decided");
  void frames;
});

Deno.test("lip sync model: the TypeScript classifier matches the training script's outputs", async () => {
  const ref = JSON.parse(await Deno.readTextFile(new URL("./lipsync_model_reference.json", import.meta.url)));
  for (const u of ref as { raw: number[][]; logits: number[][] }[]) {
    const c = new StreamingClassifier(16000);
    const got: Float32Array[] = [];
    const take = (k: number, lp: Float32Array) => got[k] = lp.slice();
    for (const raw of u.raw) {
      c.pushFrame({ bands: Float32Array.from(raw.slice(0, MEL_BANDS)), energy: raw[MEL_BANDS] }, take);
    }
    c.endFrames(take);
    assert.equal(got.length, u.logits.length);
    for (let k = 0; k < got.length; k++) {
      const l = u.logits[k];
      const m = Math.max(...l);
      const lse = m + Math.log(l.reduce((a, x) => a + Math.exp(x - m), 0));
      for (let v = 0; v < VISEMES.length; v++) {
        assert.ok(Math.abs(l[v] - lse - got[k][v]) < 1e-3, `frame ${k}`);
      }
    }
  }
});

Deno.test("lip sync accuracy floor on unseen espeak-ng voices (en, de, fr): words and transcript beat audio alone", () => {
  const cases: [string, string, string][] = [
    ["Please pass the peppermint, Mom. My favourite is the purple box.", "en-us+m8", "en"],
    ["Bitte bring mir morgen frische Brötchen vom Bäcker mit.", "de+f5", "de"],
    ["Bonjour, je voudrais un peu de pain et du beurre, merci.", "fr+klatt4", "fr"],
  ];
  for (const [text, voice, lang] of cases) {
    const u = speak(text, voice, lang);
    const truth = frameLabels(u.segments, u.samples.length * 1000 / u.sampleRate);
    const base = { samples: u.samples, sampleRate: u.sampleRate, lang };
    const r = (extra: object) =>
      ratios(score(lipSyncRecording({ ...base, ...extra }).frames, truth, u.segments));
    const audio = r({}), text_ = r({ text: u.text }), words = r({ words: u.words });
    const where = `${lang}: audio ${audio.acc7.toFixed(2)} text ${text_.acc7.toFixed(2)} words ${
      words.acc7.toFixed(2)
    }`;
    assert.ok(audio.acc7 >= 0.55, where);
    assert.ok(words.acc7 >= 0.7 && words.recall >= 0.8, `${where}, words recall ${words.recall.toFixed(2)}`);
    assert.ok(text_.acc7 >= 0.65 && text_.recall >= 0.7, `${where}, text recall ${text_.recall.toFixed(2)}`);
  }
});

Deno.test("visemes: espeak-ng's IPA in English, German and French maps onto the 15 visemes", () => {
  const v = (ipa: string, lang = "en") => phonemeVisemes(ipa, lang)?.parts.map((p) => p.viseme).join("+");
  assert.equal(v("p"), "PP");
  assert.equal(v("m"), "PP");
  assert.equal(v("v"), "FF");
  assert.equal(v("θ"), "TH");
  assert.equal(v("ˈaɪ"), "aa+ih");
  assert.equal(v("tʃ"), "CH");
  assert.equal(v("pf", "de"), "PP+FF");
  assert.equal(v("ʁ", "fr"), "RR");
  assert.equal(v("ɔ̃", "fr"), "oh");
  assert.equal(v("y", "fr"), "ou");
  assert.equal(v("(en)"), undefined);
});

Deno.test("face: listening while the user speaks, thinking from the user's last word to the agent's first sound", () => {
  const user = speak("Hello there, how are you doing today?", "en-us+f5");
  const pcm24 = Int16Array.from(
    new StreamResampler(user.sampleRate, 24000).process(user.samples),
    (x) => Math.round(x),
  );
  let now = 0;
  const face = new SessionFace({
    engineRate: 24000,
    timelineRate: 48000,
    inputRate: 24000,
    seed: 3,
    now: () => now,
  });
  const bytes = (pcm: Int16Array) => new Uint8Array(pcm.buffer, pcm.byteOffset, pcm.byteLength);
  assert.equal(face.faceAt(0).mode, "idle");
  assert.equal(face.faceAt(0).look, "neutral");
  // The user speaks (20 ms microphone frames).
  for (let at = 0; at < pcm24.length / 2; at += 480) {
    face.userAudio(bytes(pcm24.slice(at, at + 480)));
    now += 20;
  }
  assert.equal(face.faceAt(now).mode, "listening");
  assert.equal(face.faceAt(now).look, "listening");
  // Then stops: after the end-of-turn silence, the avatar thinks.
  for (let i = 0; i < 40; i++) {
    face.userAudio(bytes(new Int16Array(480)));
    now += 20;
  }
  const thinking = face.faceAt(now);
  assert.equal(thinking.mode, "thinking");
  assert.equal(thinking.look, "thinking");
  // Its first sound ends the thinking look.
  face.responseStarted("r_1");
  face.words("r_1", user.words);
  const agent = pcm24;
  for (let at = 0; at < agent.length; at += 480) face.audio(agent.subarray(at, at + 480), "r_1");
  face.responseDone("r_1");
  const at = Math.round(now * 48);
  face.placed("r_1", 0, at, agent.length * 2);
  assert.equal(face.faceAt(now + 300).mode, "speaking");
  assert.equal(face.faceAt(now + 300).look, "neutral");
  assert.equal(face.faceAt(now + agent.length / 24 + 200).mode, "idle", "the thinking look is over");
  // Head motion stays small; blinks happen.
  let blinks = 0;
  for (let t = 0; t < 20_000; t += 40) {
    const f = face.faceAt(now + agent.length / 24 + 400 + t);
    assert.ok(Math.abs(f.headDx) <= 4 && Math.abs(f.headDy) <= 4, `head at ${f.headDx}, ${f.headDy}`);
    if (f.eyes === "closed") blinks++;
  }
  assert.ok(blinks >= 3, `${blinks} closed-eye frames in 20 s`);
});

Deno.test("art: every avatar draws 15 distinct mouths; a blend of neighbours lies between them", async () => {
  const art = await loadArtBank(CATALOG, 256, 256);
  for (const a of CATALOG.avatars) {
    const avatar = art.avatars.get(a.id)!;
    const pixels = VISEMES.map((v) => avatar.mouth(VISEME_POSES[v]).rgba);
    for (let i = 0; i < pixels.length; i++) {
      for (let j = i + 1; j < pixels.length; j++) {
        assert.notDeepEqual(pixels[i], pixels[j], `${a.id}: ${VISEMES[i]} and ${VISEMES[j]} differ`);
      }
    }
    // The dark mouth cavity: none when closed, most for aa; half PP + half aa is in between.
    const dark = (rgba: Uint8Array) => {
      let n = 0;
      for (let i = 0; i < rgba.length; i += 4) if (rgba[i + 3] > 200 && rgba[i] < 66 && rgba[i + 1] < 22) n++;
      return n;
    };
    const w = new Float32Array(VISEMES.length);
    w[VISEME_INDEX.PP] = 0.5;
    w[VISEME_INDEX.aa] = 0.5;
    const half = dark(avatar.mouth(blendPose(w)).rgba);
    const closed = dark(avatar.mouth(VISEME_POSES.PP).rgba), open = dark(avatar.mouth(VISEME_POSES.aa).rgba);
    assert.ok(closed < 5, `${a.id}: PP shows no cavity (${closed})`);
    assert.ok(half > closed && half < open, `${a.id}: ${closed} < ${half} < ${open}`);
  }
});
