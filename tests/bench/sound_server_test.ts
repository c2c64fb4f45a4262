/**
 * The sound server's account of its streams' latency (`testing/firefox.ts`, `parseStreamLatencies`): the
 * Firefox bench's page tap takes Firefox's output latency from it rather than asking a page (Firefox's first
 * read of a context's latency can deadlock it: docs/media-plane.md, "In Firefox").
 */
import assert from "node:assert/strict";
import { parseStreamLatencies } from "../../testing/firefox.ts";

/** One stream of `pactl list sink-inputs` (PulseAudio 16.1) as Firefox's plays to the null sink. */
const input = (n: number, bufferUs: number, sinkUs: number) =>
  `Sink Input #${n}
\tDriver: protocol-native.c
\tOwner Module: 1
\tClient: ${n + 3}
\tSink: 0
\tSample Specification: float32le 2ch 48000Hz
\tCorked: no
\tMute: no
\tVolume: front-left: 65536 / 100% / 0.00 dB,   front-right: 65536 / 100% / 0.00 dB
\t        balance 0.00
\tBuffer Latency: ${bufferUs} usec
\tSink Latency: ${sinkUs} usec
\tResample method: n/a
\tProperties:
\t\tmedia.name = "AudioStream"
\t\tapplication.name = "Firefox"
`;

Deno.test("sound server: each stream's latency is its buffer's plus its sink's, in ms; a stream without both is left out", () => {
  assert.deepEqual(parseStreamLatencies(""), []);
  assert.deepEqual(parseStreamLatencies(input(7, 24_354, 20_000)), [44.354]);
  const corked = input(9, 1_000, 2_000).replace(/\tBuffer Latency: .*\n/, "");
  assert.deepEqual(
    parseStreamLatencies(`${input(7, 24_354, 20_000)}\n${corked}\n${input(11, 10_500, 20_000)}`),
    [44.354, 30.5],
  );
});
