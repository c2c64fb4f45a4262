/**
 * The SFU transport's pure parts: RTP packetizing (H.264 packetization mode 1, Opus) and parsing, TURN REST
 * credentials, SDP and profile helpers, the `SVC_SFU_*` / `SVC_TURN_*` configuration rules, and the
 * microphone receiver decoding real Opus RTP to PCM at the engine's rate.
 */
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import dgram from "node:dgram";
import { ConfigError, loadConfig, type SfuConfig, StartupError } from "../../src/config.ts";
import { sfuTrust } from "../../src/app/outbound.ts";
import { generateEngineTls } from "../../engine/tls.ts";
import { OggOpusDemuxer } from "../../src/media/ogg_opus.ts";
import { MicReceiver } from "../../src/media/transports/webrtc_sfu/mic.ts";
import {
  avccNalUnits,
  avcCParameterSets,
  packetizeH264,
  parseRtp,
  RTP_MAX_PAYLOAD,
  RtpStream,
} from "../../src/media/transports/webrtc_sfu/rtp.ts";
import { h264ProfileLevelId } from "../../src/media/transports/webrtc_sfu/session_objects.ts";
import { audioMid } from "../../src/media/transports/webrtc_sfu/transport.ts";
import { openRtpSender } from "../../src/media/transports/webrtc_sfu/udp_sender.ts";
import { iceServersFor, turnCredential } from "../../src/media/transports/webrtc_sfu/turn.ts";
import { until } from "../../testing/media.ts";

/** An AVCC access unit of the given NAL units. */
/** Opus packets of a 440 Hz tone of `seconds`, encoded by ffmpeg (libopus), 20 ms each, mono. */
async function tonePackets(seconds: number): Promise<Uint8Array[]> {
  const out = await new Deno.Command("ffmpeg", {
    args: [
      ...["-hide_banner", "-v", "error", "-f", "lavfi"],
      ...["-i", `sine=frequency=440:sample_rate=48000:duration=${seconds}`],
      ...["-c:a", "libopus", "-frame_duration", "20", "-ac", "1", "-f", "ogg", "-"],
    ],
    stdout: "piped",
    stderr: "null",
  }).output();
  const packets: Uint8Array[] = [];
  new OggOpusDemuxer({ onHead: () => {}, onPacket: (p) => packets.push(p) }).push(out.stdout);
  return packets;
}

function avcc(...nals: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(nals.reduce((n, x) => n + 4 + x.length, 0));
  const dv = new DataView(out.buffer);
  let o = 0;
  for (const n of nals) {
    dv.setUint32(o, n.length);
    out.set(n, o + 4);
    o += 4 + n.length;
  }
  return out;
}

function nal(type: number, size: number, fill = 7): Uint8Array {
  const n = new Uint8Array(size).fill(fill);
  n[0] = 0x60 | type; // nal_ref_idc 3
  return n;
}

Deno.test("rtp: H.264 access units go as single NAL packets and FU-A fragments, parameter sets first, marker last", () => {
  const stream = new RtpStream(96);
  const sps = nal(7, 20), pps = nal(8, 6);
  const sei = nal(6, 30), idr = nal(5, 3000, 9), aud = nal(9, 2);
  const packets = packetizeH264(stream, avcc(aud, sei, idr), 90_000, [sps, pps]);
  const parsed = packets.map((p) => parseRtp(p)!);
  assert.ok(parsed.every((p) => p.payloadType === 96 && p.ssrc === stream.ssrc));
  assert.ok(parsed.every((p) => p.timestamp === parsed[0].timestamp), "one timestamp per access unit");
  for (let i = 1; i < parsed.length; i++) {
    assert.equal(parsed[i].sequence, (parsed[i - 1].sequence + 1) & 0xffff, "consecutive sequence numbers");
  }
  assert.deepEqual(parsed.map((p) => p.marker), parsed.map((_, i) => i === parsed.length - 1));
  assert.deepEqual(parsed[0].payload, sps);
  assert.deepEqual(parsed[1].payload, pps);
  // The AUD and SEI are left out; the IDR is fragmented and reassembles exactly.
  const fus = parsed.slice(2);
  assert.ok(fus.length === Math.ceil((idr.length - 1) / (RTP_MAX_PAYLOAD - 2)));
  assert.ok(fus.every((p) => p.payload.length <= RTP_MAX_PAYLOAD && (p.payload[0] & 0x1f) === 28));
  assert.equal(fus[0].payload[1] & 0xc0, 0x80, "start bit on the first fragment");
  assert.equal(fus.at(-1)!.payload[1] & 0xc0, 0x40, "end bit on the last fragment");
  assert.ok(fus.slice(1, -1).every((p) => (p.payload[1] & 0xc0) === 0));
  const body = fus.flatMap((p) => [...p.payload.subarray(2)]);
  const rebuilt = Uint8Array.from([(fus[0].payload[0] & 0xe0) | (fus[0].payload[1] & 0x1f), ...body]);
  assert.deepEqual(rebuilt, idr);
  // A frame that is not a keyframe carries no parameter sets.
  const p = packetizeH264(stream, avcc(nal(1, 200)), 93_600).map((x) => parseRtp(x)!);
  assert.equal(p.length, 1);
  assert.ok(p[0].marker);
  assert.equal(p[0].timestamp - parsed[0].timestamp, 3600);
});

Deno.test("rtp: parameter sets come out of the avcC; AVCC splitting; parsing skips CSRCs, extensions and padding", () => {
  const sps = nal(7, 12), pps = nal(8, 4);
  const avcC = Uint8Array.from([1, 0x42, 0xc0, 0x1e, 0xff, 0xe1, 0, 12, ...sps, 1, 0, 4, ...pps]);
  assert.deepEqual(avcCParameterSets(avcC), [sps, pps]);
  assert.deepEqual(avccNalUnits(avcc(sps, pps)), [sps, pps]);
  // version 2, padding, extension, 1 CSRC; PT 111, marker
  const payload = Uint8Array.of(1, 2, 3);
  const pkt = Uint8Array.from([
    0xb1,
    0x80 | 111,
    0,
    5,
    0,
    0,
    0,
    9,
    0,
    0,
    0,
    42,
    0,
    0,
    0,
    1, // CSRC
    0xbe,
    0xde,
    0,
    1,
    1,
    2,
    3,
    4, // one-word extension
    ...payload,
    0,
    2, // padding of 2
  ]);
  const r = parseRtp(pkt)!;
  assert.equal(r.payloadType, 111);
  assert.equal(r.sequence, 5);
  assert.equal(r.timestamp, 9);
  assert.equal(r.ssrc, 42);
  assert.ok(r.marker);
  assert.deepEqual(r.payload, payload);
  assert.equal(parseRtp(Uint8Array.of(0x80, 200, 0, 0)), null, "too short");
  assert.equal(parseRtp(new Uint8Array(20).fill(0)), null, "not version 2");
});

Deno.test("turn: REST credentials as coturn computes them, expiring with the token; STUN URLs get none", async () => {
  const expires = Date.UTC(2030, 0, 1);
  const c = await turnCredential("shared-secret-0123456789", "session:abc", expires);
  assert.equal(c.username, `${expires / 1000}:session-abc`);
  assert.equal(
    c.credential,
    createHmac("sha1", "shared-secret-0123456789").update(c.username).digest("base64"),
  );
  const ice = await iceServersFor(
    {
      iceUrls: [
        "stun:stun.example.com:3478",
        "turn:turn.example.com:3478?transport=udp",
        "turns:turn.example.com:443",
      ],
      turnSecret: "shared-secret-0123456789",
    },
    "session:abc",
    expires,
  );
  assert.deepEqual(ice[0], { urls: ["stun:stun.example.com:3478"] });
  assert.deepEqual(ice[1].urls, ["turn:turn.example.com:3478?transport=udp", "turns:turn.example.com:443"]);
  assert.equal(ice[1].username, c.username);
  assert.deepEqual(await iceServersFor({ iceUrls: [], turnSecret: null }, "s", expires), []);
});

Deno.test("sdp and profile helpers: the microphone's mid; the advertised H.264 level follows the size", () => {
  const sdp =
    "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=mid:0\r\n" +
    "a=sendonly\r\n";
  assert.equal(audioMid(sdp), "0");
  assert.equal(audioMid("v=0\r\nm=video 9 RTP/AVP 96\r\na=mid:v\r\n"), null);
  assert.equal(h264ProfileLevelId({ width: 512, height: 512, fps: 25 }), "42e01e");
  assert.equal(h264ProfileLevelId({ width: 1280, height: 720, fps: 30 }), "42e01f");
  assert.equal(h264ProfileLevelId({ width: 1920, height: 1080, fps: 30 }), "42e028");
});

Deno.test("config: the SFU settings, and one line naming the variable when they are wrong", () => {
  assert.equal(loadConfig({}).sfu, null, "no SFU by default");
  const c = loadConfig({
    SVC_SFU_JANUS_URL: "ws://localhost:8188",
    SVC_SFU_ADMIN_SECRET: "0123456789abcdef",
    SVC_TURN_URLS: "stun:a.example:3478, turn:b.example:3478?transport=udp",
    SVC_TURN_SECRET: "fedcba9876543210",
  }).sfu!;
  assert.equal(c.rtpHost, "127.0.0.1");
  assert.equal(c.workerRtpHost, "127.0.0.1");
  assert.equal(c.recoveryTimeoutMs, 15_000);
  assert.deepEqual(c.iceUrls, ["stun:a.example:3478", "turn:b.example:3478?transport=udp"]);
  assert.equal(c.caFile, null);
  assert.equal(
    loadConfig({
      SVC_SFU_JANUS_URL: "wss://janus.internal:8989",
      SVC_SFU_ADMIN_SECRET: "0123456789abcdef",
      SVC_SFU_CA_FILE: "/etc/svc/janus-ca.pem",
    }).sfu!.caFile,
    "/etc/svc/janus-ca.pem",
  );
  const api = loadConfig({
    SVC_ROLE: "api",
    SVC_INTERNAL_SECRET: "x".repeat(32),
    SVC_TOKEN_SECRET: "y".repeat(32),
    SVC_SFU_JANUS_URL: "wss://janus.internal:8989",
  }).sfu;
  assert.equal(api, null, "an api process takes no SFU setting (it learns from the workers' registrations)");
  const bad: [Record<string, string>, RegExp][] = [
    [
      { SVC_SFU_JANUS_URL: "ws://127.0.0.1:8188" },
      /^invalid configuration: SVC_SFU_ADMIN_SECRET is required/,
    ],
    [{ SVC_SFU_JANUS_URL: "http://127.0.0.1:8088" }, /^invalid configuration: SVC_SFU_JANUS_URL /],
    [
      { SVC_TURN_URLS: "turn:x:3478" },
      /^invalid configuration: SVC_TURN_URLS is set but SVC_SFU_JANUS_URL is not/,
    ],
    [
      {
        SVC_SFU_JANUS_URL: "ws://j:8188",
        SVC_SFU_ADMIN_SECRET: "0123456789abcdef",
        SVC_TURN_URLS: "turn:x:3478",
      },
      /^invalid configuration: SVC_TURN_SECRET is required/,
    ],
    [
      {
        SVC_SFU_JANUS_URL: "ws://j:8188",
        SVC_SFU_ADMIN_SECRET: "0123456789abcdef",
        SVC_TURN_URLS: "http://x",
      },
      /^invalid configuration: SVC_TURN_URLS /,
    ],
    [
      { SVC_SFU_JANUS_URL: "ws://j:8188", SVC_SFU_ADMIN_SECRET: "short" },
      /^invalid configuration: SVC_SFU_ADMIN_SECRET /,
    ],
    [
      { SVC_SFU_CA_FILE: "/etc/svc/janus-ca.pem" },
      /^invalid configuration: SVC_SFU_CA_FILE is set but SVC_SFU_JANUS_URL is not$/,
    ],
    [
      {
        SVC_SFU_JANUS_URL: "ws://j:8188",
        SVC_SFU_ADMIN_SECRET: "0123456789abcdef",
        SVC_SFU_CA_FILE: "/etc/svc/janus-ca.pem",
      },
      /^invalid configuration: SVC_SFU_CA_FILE is set but SVC_SFU_JANUS_URL is not a wss:\/\/ URL/,
    ],
  ];
  for (const [env, message] of bad) {
    assert.throws(
      () => loadConfig(env),
      (err: Error) => err instanceof ConfigError && message.test(err.message),
    );
  }
  assert.throws(
    () => loadConfig({ SVC_SFU_JANUS_URL: "ws://j:8188", SVC_SFU_ADMIN_SECRET: "s3cr3t" }),
    (err: Error) => err instanceof ConfigError && !err.message.includes("s3cr3t"),
    "the value is never echoed",
  );
});

Deno.test("config: SVC_SFU_CA_FILE is read at start-up; a file that cannot be read or holds no certificate stops it, naming the variable", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const sfu = (caFile: string | null) => ({ sfu: caFile === null ? null : { caFile } as SfuConfig });
    assert.deepEqual(await sfuTrust(sfu(null)), []);
    assert.deepEqual(await sfuTrust({ sfu: { caFile: null } as SfuConfig }), []);
    const pem = (await generateEngineTls()).caPem;
    await Deno.writeTextFile(`${dir}/ca.pem`, pem);
    assert.deepEqual(await sfuTrust(sfu(`${dir}/ca.pem`)), [pem]);
    await Deno.writeTextFile(
      `${dir}/key.pem`,
      "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
    );
    for (
      const [path, message] of [
        [`${dir}/missing.pem`, /^SVC_SFU_CA_FILE: cannot read ".*missing\.pem" \(NotFound\)$/],
        [`${dir}/key.pem`, /^SVC_SFU_CA_FILE: ".*key\.pem" holds no PEM certificate$/],
      ] as const
    ) {
      await assert.rejects(
        sfuTrust(sfu(path)),
        (err: Error) => err instanceof StartupError && message.test(err.message),
      );
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("mic receiver: Opus RTP from Janus becomes PCM16 at the engine's rate (direct or resampled); junk is counted", async () => {
  // Real Opus packets: 1 s of a 440 Hz tone encoded by ffmpeg, 20 ms per packet, as a browser sends them.
  const packets = await tonePackets(1);
  assert.ok(packets.length >= 49);
  for (const rate of [24000, 22050]) {
    const pcm: Uint8Array[] = [];
    const mic = await MicReceiver.open("127.0.0.1", rate, (b) => pcm.push(b.slice()));
    const sender = dgram.createSocket("udp4");
    try {
      const stream = new RtpStream(111);
      for (const [i, p] of packets.entries()) {
        sender.send(stream.packet(i * 960, false, p), mic.port, "127.0.0.1");
      }
      sender.send(Uint8Array.of(1, 2, 3), mic.port, "127.0.0.1"); // not RTP
      await until(
        () => mic.stats.packets === packets.length && mic.stats.invalid === 1,
        10_000,
        "all packets",
      );
      const samples = pcm.reduce((n, b) => n + b.length / 2, 0);
      const expected = packets.length * 0.02 * rate;
      assert.ok(Math.abs(samples - expected) <= packets.length + 2, `${samples} samples at ${rate} Hz`);
      assert.equal(
        pcm[10].length / 2,
        rate === 24000 ? 480 : pcm[10].length / 2,
        "20 ms per packet at 24 kHz",
      );
      const all = new Int16Array(samples);
      let o = 0;
      for (const b of pcm) {
        all.set(new Int16Array(b.buffer, b.byteOffset, b.length / 2), o);
        o += b.length / 2;
      }
      const mid = all.subarray(Math.floor(samples / 4), Math.floor(samples / 2));
      const rms = Math.sqrt(mid.reduce((s, x) => s + x * x, 0) / mid.length);
      assert.ok(rms > 1500, `the tone comes out (rms ${Math.round(rms)}; ffmpeg's sine peaks at 1/8)`);
      let cycles = 0; // low → high transitions, with hysteresis against codec noise near zero
      let high = mid[0] > 0;
      for (const x of mid) {
        if (!high && x > 500) {
          high = true;
          cycles++;
        } else if (high && x < -500) high = false;
      }
      const hz = cycles / (mid.length / rate);
      assert.ok(Math.abs(hz - 440) < 15, `440 Hz at ${rate} Hz output (${Math.round(hz)})`);
    } finally {
      await new Promise<void>((r) => sender.close(() => r()));
      await mic.close();
    }
  }
});

Deno.test("rtp sender: a burst sent the moment the socket is open arrives in order (the opening keyframe)", async () => {
  const rx = dgram.createSocket("udp4");
  const got: number[] = [];
  await new Promise<void>((r) => rx.bind(0, "127.0.0.1", () => r()));
  rx.on("message", (m: Uint8Array) => got.push(m[0]));
  const port = (rx.address() as { port: number }).port;
  const tx = await openRtpSender("127.0.0.1");
  try {
    // (Deno 2.9.6 reverses sends queued on a socket that is not bound yet: 9, 8, …, 0.)
    for (let i = 0; i < 20; i++) tx.send(Uint8Array.of(i), port, "127.0.0.1");
    await until(() => got.length === 20, 10_000, "every packet");
    assert.deepEqual(got, [...Array(20).keys()]);
  } finally {
    await new Promise<void>((r) => tx.close(() => r()));
    await new Promise<void>((r) => rx.close(() => r()));
  }
});

Deno.test("mic receiver: a new publisher's packets (another SSRC) are all decoded while the fresh decoder starts, none by a freed one", async () => {
  const packets = await tonePackets(0.4);
  const pcm: Uint8Array[] = [];
  const mic = await MicReceiver.open("127.0.0.1", 24000, (b) => pcm.push(b.slice()));
  const sender = dgram.createSocket("udp4");
  try {
    // One publisher, then another (a reconnect): same packets, a new SSRC, sent at once.
    const a = new RtpStream(111);
    const b = new RtpStream(111);
    for (const [i, p] of packets.entries()) sender.send(a.packet(i * 960, false, p), mic.port, "127.0.0.1");
    for (const [i, p] of packets.entries()) sender.send(b.packet(i * 960, false, p), mic.port, "127.0.0.1");
    await until(() => mic.stats.packets === 2 * packets.length, 10_000, "all packets");
    await until(() => mic.stats.bytes >= 2 * packets.length * 960, 2_000, "every packet's PCM").catch(
      () => {},
    );
    // 20 ms at 24 kHz from every packet (a packet decoded by a freed decoder gives none).
    assert.equal(
      mic.stats.bytes,
      2 * packets.length * 960,
      `${pcm.length} PCM chunks for ${2 * packets.length} packets`,
    );
  } finally {
    await new Promise<void>((r) => sender.close(() => r()));
    await mic.close();
  }
});
