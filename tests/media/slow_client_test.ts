/**
 * Slow clients: one that stops reading is closed (4408) once its backlog passes the limit, while the
 * renderer and the other clients go on.
 */
import assert from "node:assert/strict";
import { MEDIA_CLOSE } from "../../src/vocabulary/close_codes.ts";
import { Fanout, type MediaClient } from "../../src/media/transports/ws_fmp4/fanout.ts";
import { FRAME_HEADER_BYTES } from "../../src/media/transports/ws_fmp4/frames.ts";
import type { Renderer } from "../../src/media/renderer.ts";
import { DEADLINE_MS } from "../../testing/deadline.ts";
import { MediaClientRecorder, until, withMedia } from "../../testing/media.ts";

Deno.test("fan-out: a client over its backlog limit is closed 4408 and the others keep receiving", () => {
  const counts: number[] = [];
  const fanout = new Fanout({ maxBufferedBytes: 1000, maxClients: 4 }, (n) => counts.push(n));
  const fast = { sent: 0, closed: null as number | null };
  const slow = { sent: 0, closed: null as number | null, buffered: 0 };
  const fastClient: MediaClient = {
    send: () => fast.sent++,
    bufferedAmount: 0,
    close: (code) => fast.closed = code,
  };
  const slowClient: MediaClient = {
    send: (d) => {
      slow.sent++;
      slow.buffered += typeof d === "string" ? d.length : d.length;
    },
    get bufferedAmount() {
      return slow.buffered;
    },
    close: (code) => slow.closed = code,
  };
  fanout.setInit({ type: "hello" }, new Uint8Array(10));
  assert.ok(fanout.add(fastClient));
  assert.ok(fanout.add(slowClient));
  for (let i = 0; i < 20; i++) {
    fanout.publish({
      kind: "video",
      data: new Uint8Array(200),
      key: i === 0,
      startMs: i * 40,
      endMs: i * 40 + 40,
    });
  }
  assert.equal(slow.closed, MEDIA_CLOSE.TOO_SLOW.code);
  assert.ok(slow.sent < 10, `slow client got ${slow.sent} messages`);
  assert.equal(fast.sent, 22, "hello + init + 20 segments");
  assert.equal(fast.closed, null);
  assert.equal(fanout.count, 1);
  assert.equal(fanout.slowClosed, 1);
  assert.deepEqual(counts, [1, 2, 1]);
});

Deno.test("fan-out: joiners get the init segment then the cache from the latest keyframe; a full session refuses 4429", () => {
  const fanout = new Fanout({ maxBufferedBytes: 1 << 20, maxClients: 1 }, () => {});
  fanout.setInit({ type: "hello" }, new Uint8Array([1]));
  const seg = (n: number) => new Uint8Array([n]);
  fanout.publish({ kind: "video", data: seg(10), key: true, startMs: 0, endMs: 40 });
  fanout.publish({ kind: "audio", data: seg(11), key: true, startMs: 900, endMs: 1020 });
  fanout.publish({ kind: "video", data: seg(12), key: true, startMs: 1000, endMs: 1040 });
  fanout.publish({ kind: "audio", data: seg(13), key: true, startMs: 1020, endMs: 1040 });
  fanout.publish({ kind: "video", data: seg(14), key: false, startMs: 1040, endMs: 1080 });
  const got: (number | string)[] = [];
  assert.ok(
    fanout.add({ send: (d) => got.push(typeof d === "string" ? d : d[0]), bufferedAmount: 0, close() {} }),
  );
  // the audio that overlaps the keyframe stays; everything before the keyframe is gone
  assert.deepEqual(got, ['{"type":"hello"}', 1, 11, 12, 13, 14]);
  let refused = 0;
  assert.ok(!fanout.add({ send() {}, bufferedAmount: 0, close: (code) => refused = code }));
  assert.equal(refused, 4429);
});

Deno.test("fan-out: a client of the lighter framing gets its own hello, no init segment, the frames since the keyframe and only audio not yet past", () => {
  const fanout = new Fanout({ maxBufferedBytes: 1 << 20, maxClients: 4 }, () => {});
  fanout.setInit((framing) => ({ type: "hello", framing }), new Uint8Array([1]));
  const seg = (n: number) => new Uint8Array([n]);
  // Two units per fragment, framed as they are sent (a 16-byte header: byte 0 the kind, 1 video, 2 audio).
  const units = (n: number, kind: "video" | "audio", startMs: number) =>
    [0, 1].map((k) => ({
      kind,
      timeMs: startMs + k,
      durationMs: 1,
      key: true,
      payload: new Uint8Array([n, k]),
    }));
  fanout.publish({
    kind: "video",
    data: seg(12),
    units: units(12, "video", 1000),
    key: true,
    startMs: 1000,
    endMs: 1040,
  });
  fanout.publish({
    kind: "audio",
    data: seg(13),
    units: units(13, "audio", 1000),
    key: true,
    startMs: 1000,
    endMs: 1020,
  });
  fanout.publish({
    kind: "video",
    data: seg(14),
    units: units(14, "video", 1040),
    key: false,
    startMs: 1040,
    endMs: 1080,
  });
  fanout.publish({
    kind: "audio",
    data: seg(15),
    units: units(15, "audio", 1020),
    key: true,
    startMs: 1020,
    endMs: 1100,
  });
  const got: string[] = [];
  const client = (framing?: "frames") => ({
    framing,
    send: (d: Uint8Array | string) =>
      got.push(
        typeof d === "string"
          ? d
          : d.length <= 1
          ? d.join(".")
          : `${d[0]}:${d.subarray(FRAME_HEADER_BYTES).join(".")}`,
      ),
    bufferedAmount: 0,
    close() {},
  });
  assert.ok(fanout.add(client("frames"), 1090));
  // audio that ended more than 60 ms before now (1090) is past: not sent to a frames client
  assert.deepEqual(got, [
    '{"type":"hello","framing":"frames"}',
    "1:12.0",
    "1:12.1",
    "1:14.0",
    "1:14.1",
    "2:15.0",
    "2:15.1",
  ]);
  got.length = 0;
  assert.ok(fanout.add(client(), 1090));
  assert.deepEqual(got, ['{"type":"hello","framing":"fmp4"}', "1", "12", "13", "14", "15"]);
});

/** Opens a media WebSocket over raw TCP and never reads from it again. */
async function stalledClient(base: string, path: string, token: string): Promise<Deno.TcpConn> {
  const url = new URL(base);
  const conn = await Deno.connect({ hostname: url.hostname, port: Number(url.port) });
  const key = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(16))));
  await conn.write(new TextEncoder().encode(
    `GET ${path} HTTP/1.1\r\nHost: ${url.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n` +
      `Sec-WebSocket-Protocol: avatar-media.v0, bearer.${token}\r\n\r\n`,
  ));
  const buf = new Uint8Array(512);
  const n = await conn.read(buf);
  assert.match(new TextDecoder().decode(buf.subarray(0, n ?? 0)), /^HTTP\/1\.1 101/);
  return conn;
}

Deno.test("media slow client: a client that stops reading is closed while the session and other clients go on", async () => {
  // Noise does not compress: a few MB/s of video fill the stalled socket's kernel buffers quickly.
  const format = { width: 512, height: 512, fps: 25 };
  const noise: Renderer = {
    format,
    open: () => ({
      renderFrame: () => {
        const frame = new Uint8Array(512 * 512 * 3 / 2);
        for (let o = 0; o < frame.length; o += 65536) crypto.getRandomValues(frame.subarray(o, o + 65536));
        return frame;
      },
      close: () => {},
    }),
  };
  await withMedia(async ({ create, wsUrl, base, media }) => {
    const s = await create();
    const path = new URL(s.stream_metadata.media_url).pathname;
    const good = MediaClientRecorder.withToken(wsUrl(s.session_id), s.client_token);
    await good.until(() => good.segments().length > 0, DEADLINE_MS, "good client");
    const stalled = await stalledClient(base, path, s.client_token);
    try {
      const m = media(s.session_id);
      await until(() => m.stats().clients === 2, DEADLINE_MS, "two clients");
      const framesBefore = m.stats().framesEncoded;
      const goodBefore = good.segments().length;
      await until(() => m.stats().slowClientsClosed === 1, 20_000, "the stalled client to be closed");
      assert.equal(m.stats().clients, 1, "only the good client is left");
      // The session kept rendering and the good client kept receiving meanwhile.
      assert.ok(m.stats().framesEncoded > framesBefore + 10, "frames kept being encoded");
      assert.ok(good.segments().length > goodBefore + 10, "the other client kept receiving");
      assert.equal(good.closeCode, null);
    } finally {
      stalled.close();
      await good.close();
    }
  }, { plane: { renderer: noise, limits: { maxBufferedBytes: 256 * 1024 } } });
});
