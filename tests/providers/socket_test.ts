/**
 * The bridges' own HTTP/1.1 + WebSocket client (src/providers/wire/: dial, tls, http1, upgrade, websocket, http_request) against a hand-written peer
 * that reads and writes raw bytes: the upgrade request it writes (target and header bytes, nothing
 * offered but what was asked for), refused upgrades (status, `Retry-After`, redirects not followed),
 * handshake checks (accept key, subprotocol, extensions), frames (masked out; fragmented, large, binary,
 * pings and pongs in; the peer's input acknowledged at once with an unsolicited Pong per read), close
 * codes and reasons both ways, the peer's protocol violations (close 1002,
 * 1007, 1009), trust (extra CA, unknown CA), and dropping a connection at once.
 */
import assert from "node:assert/strict";
import type { Frame, WireSocket } from "../../src/providers/wire/wire_socket.ts";
import { WireError } from "../../src/providers/wire/failure.ts";
import { InputTurns } from "../../src/providers/wire/input_turns.ts";
import { wireClient } from "../../src/providers/wire/upgrade.ts";
import { generateEngineTls } from "../../engine/mod.ts";
import { testTls } from "./_helpers.ts";

const GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
const enc = (s: string) => new TextEncoder().encode(s);

async function acceptKey(key: string): Promise<string> {
  return new Uint8Array(await crypto.subtle.digest("SHA-1", enc(key + GUID))).toBase64();
}

/** The bytes of `parts`, one after the other. */
function concatBytes(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, x) => n + x.length, 0));
  let at = 0;
  for (const x of parts) out.set(x, (at += x.length) - x.length);
  return out;
}

/** A frame from the server (unmasked unless `mask`). */
function frame(
  opcode: number,
  payload: Uint8Array,
  o: { fin?: boolean; mask?: boolean; rsv?: number } = {},
): Uint8Array {
  const len = payload.length;
  const head = len < 126 ? 2 : len < 65536 ? 4 : 10;
  const out = new Uint8Array(head + (o.mask ? 4 : 0) + len);
  out[0] = ((o.fin ?? true) ? 0x80 : 0) | (o.rsv ?? 0) | opcode;
  out[1] = (o.mask ? 0x80 : 0) | (len < 126 ? len : len < 65536 ? 126 : 127);
  if (head === 4) new DataView(out.buffer).setUint16(2, len);
  if (head === 10) new DataView(out.buffer).setBigUint64(2, BigInt(len));
  out.set(payload, head + (o.mask ? 4 : 0));
  return out;
}

function closePayload(code: number, reason = ""): Uint8Array {
  const r = enc(reason);
  const p = new Uint8Array(2 + r.length);
  new DataView(p.buffer).setUint16(0, code);
  p.set(r, 2);
  return p;
}

/** One frame the client sent, unmasked. */
interface ClientFrame {
  fin: boolean;
  opcode: number;
  masked: boolean;
  payload: Uint8Array;
}

/** A peer connection: the request head, and raw reads and writes. */
class Peer {
  #buf = new Uint8Array(0);
  constructor(readonly conn: Deno.Conn, public head: string) {}

  get key(): string {
    return /sec-websocket-key:\s*(\S+)/i.exec(this.head)?.[1] ?? "";
  }

  async write(bytes: Uint8Array): Promise<void> {
    let o = 0;
    while (o < bytes.length) o += await this.conn.write(bytes.subarray(o));
  }

  async accept(extra = ""): Promise<void> {
    await this.write(enc(
      `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${await acceptKey(
        this.key,
      )}\r\n${extra}\r\n`,
    ));
  }

  async #more(): Promise<boolean> {
    const chunk = new Uint8Array(65536);
    const n = await this.conn.read(chunk).catch(() => null);
    if (n === null) return false;
    const next = new Uint8Array(this.#buf.length + n);
    next.set(this.#buf);
    next.set(chunk.subarray(0, n), this.#buf.length);
    this.#buf = next;
    return true;
  }

  /**
   * Reads one client frame (null at the end of the connection); `skipAcks`: past the empty unsolicited Pongs
   * that acknowledge the start of the peer's input (counted in {@link Peer.acks}).
   */
  async frame(skipAcks = false): Promise<ClientFrame | null> {
    for (;;) {
      const f = await this.#frame();
      if (skipAcks && f && f.opcode === 0xa && f.payload.length === 0) {
        this.acks++;
        continue;
      }
      return f;
    }
  }

  /** Empty Pongs skipped by {@link Peer.frame}. */
  acks = 0;

  async #frame(): Promise<ClientFrame | null> {
    for (;;) {
      const b = this.#buf;
      if (b.length >= 2) {
        let len = b[1] & 0x7f;
        let i = 2;
        if (len === 126 && b.length >= 4) {
          len = (b[2] << 8) | b[3];
          i = 4;
        } else if (len === 127 && b.length >= 10) {
          len = Number(new DataView(b.buffer, b.byteOffset + 2, 8).getBigUint64(0));
          i = 10;
        }
        const masked = (b[1] & 0x80) !== 0;
        if (!(len >= 126 && i === 2) && b.length >= i + (masked ? 4 : 0) + len) {
          const mask = b.subarray(i, i + 4);
          const start = i + (masked ? 4 : 0);
          const payload = b.slice(start, start + len).map((x, k) => masked ? x ^ mask[k & 3] : x);
          this.#buf = b.slice(start + len);
          return { fin: (b[0] & 0x80) !== 0, opcode: b[0] & 0x0f, masked, payload };
        }
      }
      if (!(await this.#more())) return null;
    }
  }

  close(): void {
    try {
      this.conn.close();
    } catch { /* closed */ }
  }
}

/** A TLS peer on loopback running `script` for each connection. */
function peer(script: (p: Peer) => Promise<void>, tls = testTls) {
  const listener = Deno.listenTls({ hostname: "127.0.0.1", port: 0, cert: tls.certPem, key: tls.keyPem });
  const tasks: Promise<void>[] = [];
  const peers: Peer[] = [];
  const served = (async () => {
    for await (const conn of listener) {
      tasks.push((async () => {
        let head = "";
        const buf = new Uint8Array(16384);
        while (!head.includes("\r\n\r\n")) {
          const n = await conn.read(buf).catch(() => null);
          if (n === null) return conn.close();
          head += new TextDecoder("latin1").decode(buf.subarray(0, n));
        }
        const p = new Peer(conn, head);
        peers.push(p);
        try {
          await script(p);
        } catch { /* the client went away */ }
      })());
    }
  })().catch(() => {});
  return {
    port: (listener.addr as Deno.NetAddr).port,
    peers,
    async close() {
      listener.close();
      await served;
      for (const p of peers) p.close();
      await Promise.all(tasks);
    },
  };
}

const transport = wireClient({ caCerts: [testTls.caPem] });

function endpoint(port: number, target: (string | Uint8Array)[] = ["/v1/x?a=1"]) {
  return { secure: true, hostname: "localhost", port, host: `localhost:${port}`, target };
}

function open(port: number, extra: Partial<Parameters<typeof transport.open>[0]> = {}) {
  return transport.open({ endpoint: endpoint(port), signal: new AbortController().signal, ...extra });
}

/** Collects a socket's frames. */
function collect(s: WireSocket): Frame[] {
  const got: Frame[] = [];
  // (a binary frame is a view of the read buffer during the call: kept, a copy)
  s.setHandler((f) => got.push(typeof f === "string" ? f : f.slice()));
  return got;
}

async function until(what: string, ok: () => boolean): Promise<void> {
  const end = Date.now() + 20_000;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

Deno.test("socket: the upgrade request carries the target and header bytes as given, and offers only what was asked", async () => {
  let head = "";
  const p = peer(async (peer) => {
    head = peer.head;
    await peer.accept("Sec-WebSocket-Protocol: convai\r\n");
    await peer.write(frame(0x8, closePayload(1000)));
    await peer.frame();
  });
  try {
    const token = enc("t%2B0k3n");
    const s = await transport.open({
      endpoint: endpoint(p.port, ["/v1/agents/a?cartesia_version=1&access_token=", token]),
      headers: [{ name: "Authorization", value: ["Bearer ", enc("ek_é")] }],
      protocols: ["convai"],
      signal: new AbortController().signal,
    });
    assert.equal(s.protocol, "convai");
    assert.deepEqual(await s.closed, { code: 1000, reason: "" });
    const lines = head.split("\r\n");
    assert.equal(lines[0], "GET /v1/agents/a?cartesia_version=1&access_token=t%2B0k3n HTTP/1.1");
    assert.ok(lines.includes(`Host: localhost:${p.port}`));
    assert.ok(lines.includes("Upgrade: websocket") && lines.includes("Connection: Upgrade"));
    assert.ok(
      lines.includes("Sec-WebSocket-Version: 13") && lines.includes("Sec-WebSocket-Protocol: convai"),
    );
    // The header value's bytes, é as its Latin-1 byte (as HTTP clients send a header string).
    assert.ok(lines.includes("Authorization: Bearer ek_\u00e9"), head);
    assert.ok(!/extensions/i.test(head), "no extension offered (no permessage-deflate)");
  } finally {
    await p.close();
  }
});

Deno.test("socket: refused upgrades keep their status and Retry-After; a redirect is a refusal, not followed", async () => {
  const answers = [
    "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n",
    "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 17\r\nContent-Length: 2\r\n\r\n{}",
    "HTTP/1.1 503 Service Unavailable\r\nRetry-After: Wed, 21 Oct 2099 07:28:00 GMT\r\n\r\n",
    "HTTP/1.1 302 Found\r\nLocation: wss://elsewhere.example/\r\n\r\n",
  ];
  let i = 0;
  const p = peer(async (peer) => {
    await peer.write(enc(answers[i++]));
    peer.close();
  });
  try {
    const failures = [];
    for (let k = 0; k < answers.length; k++) {
      const err = await open(p.port).catch((e: unknown) => e);
      assert.ok(err instanceof WireError);
      failures.push(err.failure);
    }
    assert.deepEqual(failures[0], { kind: "refused", status: 401, retryAfterS: null });
    assert.deepEqual(failures[1], { kind: "refused", status: 429, retryAfterS: 17 });
    assert.equal((failures[2] as { status: number }).status, 503);
    assert.ok(((failures[2] as { retryAfterS: number }).retryAfterS ?? 0) > 1000);
    assert.deepEqual(failures[3], { kind: "refused", status: 302, retryAfterS: null });
    assert.equal(p.peers.length, 4, "one request each: the redirect was not followed");
  } finally {
    await p.close();
  }
});

Deno.test("socket: a 101 that breaks the handshake rules is refused (accept key, extensions, subprotocols)", async () => {
  const answers: ((peer: Peer) => Promise<void>)[] = [
    (peer) => peer.write(enc("HTTP/1.1 101 OK\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: nope\r\n\r\n")),
    (peer) => peer.accept("Sec-WebSocket-Extensions: permessage-deflate\r\n"),
    (peer) => peer.accept("Sec-WebSocket-Protocol: other\r\n"),
    (peer) => peer.accept(), // none selected, but one is required
  ];
  let i = 0;
  const p = peer(async (peer) => {
    await answers[i++](peer);
    await peer.frame();
  });
  try {
    for (let k = 0; k < answers.length; k++) {
      const err = await open(p.port, { protocols: ["convai"] }).catch((e: unknown) => e);
      assert.ok(err instanceof WireError, `case ${k}`);
      assert.deepEqual(err.failure, { kind: "protocol" }, `case ${k}`);
    }
  } finally {
    await p.close();
  }
});

Deno.test("socket: frames — fragments, a large and a binary message, pings answered, client frames masked", async () => {
  const big = enc("y".repeat(70_000));
  let pong: ClientFrame | null = null;
  let fromClient: ClientFrame | null = null;
  const p = peer(async (peer) => {
    await peer.accept();
    await peer.write(frame(0x1, enc("hel"), { fin: false }));
    await peer.write(frame(0x9, enc("p1"))); // a ping between fragments
    await peer.write(frame(0x0, enc("lo "), { fin: false }));
    await peer.write(frame(0x0, enc("wörld"), { fin: true }));
    await peer.write(frame(0x1, big));
    await peer.write(frame(0x2, Uint8Array.of(0, 1, 2, 255)));
    pong = await peer.frame(true);
    fromClient = await peer.frame(true);
    await peer.write(frame(0xa, new Uint8Array(0)));
    await peer.frame(); // the close
    await peer.write(frame(0x8, closePayload(1000)));
  });
  try {
    const s = await open(p.port);
    let pongs = 0;
    s.onPong = () => pongs++;
    const got = collect(s);
    await until("three messages", () => got.length === 3);
    assert.equal(got[0], "hello wörld");
    assert.equal((got[1] as string).length, 70_000);
    assert.deepEqual([...(got[2] as Uint8Array)], [0, 1, 2, 255]);
    s.send("hi");
    await until("the server's pong", () => pongs === 1);
    assert.equal(pong!.opcode, 0xa);
    assert.deepEqual(new TextDecoder().decode(pong!.payload), "p1", "the ping's payload echoed");
    assert.ok(pong!.masked && fromClient!.masked, "client frames are masked");
    assert.equal(new TextDecoder().decode(fromClient!.payload), "hi");
    s.close(1000, "bye");
    assert.equal((await s.closed).code, 1000);
  } finally {
    await p.close();
  }
});

Deno.test("socket: the peer's input is acknowledged at once (an empty unsolicited Pong), a steady stream's included", async () => {
  // What the peer sees of the client, by the phase it is in when a frame comes: empty Pongs, other frames.
  const seen: Record<string, { acks: number; other: number }> = {};
  let phase = "text";
  const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
  let go!: () => void;
  const released = new Promise<void>((r) => go = r);
  const p = peer(async (peer) => {
    await peer.accept();
    const reading = (async () => {
      for (let f = await peer.frame(); f; f = await peer.frame()) {
        const s = seen[phase] ??= { acks: 0, other: 0 };
        if (f.opcode === 0xa && f.payload.length === 0) s.acks++;
        else s.other++;
        if (f.opcode === 0x8) break;
      }
    })();
    // A text message (an engine's `response.started`), the first input: acknowledged.
    await peer.write(frame(0x1, enc('{"type":"response.started"}')));
    await released;
    await until("the first message's Pong", () => (seen.text?.acks ?? 0) > 0);
    await sleep(300); // (any second Pong would come meanwhile)
    // After a quiet moment (≥ 100 ms), a binary message starts a burst: acknowledged.
    phase = "burst";
    await peer.write(frame(0x2, new Uint8Array(960)));
    await until("the burst's Pong", () => (seen.burst?.acks ?? 0) > 0);
    await sleep(300);
    // A steady stream of 60 binary messages 10 ms apart: acknowledged throughout, not only its first 100 ms
    // (an acknowledgement delayed past them held an engine's next chunk 20-25 ms).
    phase = "steady";
    for (let i = 0; i < 60; i++) {
      await peer.write(frame(0x2, new Uint8Array(960)));
      await sleep(10);
    }
    await sleep(300);
    phase = "end";
    await peer.write(frame(0x8, closePayload(1000)));
    await reading;
  });
  try {
    const s = await open(p.port);
    const got = collect(s);
    await until("the text message", () => got.length === 1);
    go();
    await until("every message", () => got.length === 62);
    await s.closed;
    assert.deepEqual(seen.text, { acks: 1, other: 0 }, "the first message acknowledged once");
    assert.deepEqual(seen.burst, { acks: 1, other: 0 }, "the first binary message after a quiet moment");
    assert.equal(seen.steady.other, 0);
    // A Pong per read: up to 60 (fewer when a busy client reads several messages at once); the first 100
    // ms alone would be about 10.
    assert.ok(seen.steady.acks >= 25 && seen.steady.acks <= 60, `steady acks ${seen.steady.acks}`);
  } finally {
    await p.close();
  }
});

Deno.test("socket: binary messages read many to a buffer arrive whole — queued before a handler, handed over, or in pieces", async () => {
  // 60 messages of 1 000 bytes, each filled with its number: more than the 16 KB read buffer, so the buffer
  // is reused and compacted under the messages queued before the handler (they must be copies).
  const filled = (i: number, n = 1000) => new Uint8Array(n).fill(i);
  const p = peer(async (peer) => {
    await peer.accept();
    const first = Array.from({ length: 30 }, (_, i) => frame(0x2, filled(i)));
    await peer.write(concatBytes(first));
    await new Promise((r) => setTimeout(r, 300));
    const rest = Array.from({ length: 30 }, (_, i) => frame(0x2, filled(30 + i)));
    await peer.write(concatBytes(rest));
    // A message in three pieces, each read alone (the buffer is reused under the pieces kept).
    await peer.write(frame(0x2, filled(90, 700), { fin: false }));
    await new Promise((r) => setTimeout(r, 100));
    await peer.write(frame(0x0, filled(91, 700), { fin: false }));
    await new Promise((r) => setTimeout(r, 100));
    await peer.write(frame(0x0, filled(92, 700)));
    await peer.frame(); // the close
    await peer.write(frame(0x8, closePayload(1000)));
  });
  try {
    const s = await open(p.port);
    await new Promise((r) => setTimeout(r, 150)); // the first 30 are queued meanwhile
    const got = collect(s);
    await until("61 messages", () => got.length === 61);
    for (let i = 0; i < 60; i++) {
      const m = got[i] as Uint8Array;
      assert.ok(m.length === 1000 && m.every((b) => b === i), `message ${i} intact`);
    }
    const pieces = got[60] as Uint8Array;
    assert.equal(pieces.length, 2100);
    assert.ok([90, 91, 92].every((v, k) => pieces.subarray(700 * k, 700 * k + 700).every((b) => b === v)));
    s.close(1000, "bye");
    assert.equal((await s.closed).code, 1000);
  } finally {
    await p.close();
  }
});

Deno.test("socket: close codes and reasons both ways", async () => {
  let clientClose: ClientFrame | null = null;
  let echo: ClientFrame | null = null;
  let round = 0;
  const p = peer(async (peer) => {
    await peer.accept();
    if (round++ === 0) {
      clientClose = await peer.frame();
      await peer.write(frame(0x8, closePayload(1000, "ok")));
      await peer.frame();
    } else {
      await peer.write(frame(0x8, closePayload(4001, "unauthorized")));
      echo = await peer.frame();
      peer.close();
    }
  });
  try {
    const a = await open(p.port);
    a.close(1000, "session ended");
    assert.deepEqual(await a.closed, { code: 1000, reason: "ok" });
    assert.equal(new DataView(clientClose!.payload.buffer).getUint16(0), 1000);
    assert.equal(new TextDecoder().decode(clientClose!.payload.subarray(2)), "session ended");
    const b = await open(p.port);
    assert.deepEqual(await b.closed, { code: 4001, reason: "unauthorized" });
    assert.equal(echo!.opcode, 0x8);
    assert.equal(new DataView(echo!.payload.buffer).getUint16(0), 4001, "the close is echoed with its code");
  } finally {
    await p.close();
  }
});

Deno.test("socket: the peer's protocol violations close the connection with the RFC's code", async () => {
  const cases: [string, Uint8Array, number][] = [
    ["a masked server frame", frame(0x1, enc("x"), { mask: true }), 1002],
    ["a reserved bit (no extension)", frame(0x1, enc("x"), { rsv: 0x40 }), 1002],
    ["an unknown opcode", frame(0x3, enc("x")), 1002],
    ["text that is not UTF-8", frame(0x1, Uint8Array.of(0xff, 0xfe)), 1007],
    ["a close with code 1005", frame(0x8, closePayload(1005)), 1002],
    ["a continuation with nothing to continue", frame(0x0, enc("x")), 1002],
    ["a message over the limit", Uint8Array.of(0x82, 127, 0, 0, 0, 0, 0x10, 0, 0, 1), 1009],
  ];
  const seen: number[] = [];
  let i = 0;
  const p = peer(async (peer) => {
    const [, bytes] = cases[i++];
    await peer.accept();
    await peer.write(bytes);
    const f = await peer.frame();
    seen.push(f && f.opcode === 0x8 ? new DataView(f.payload.buffer).getUint16(0) : -1);
  });
  try {
    for (const [what, , code] of cases) {
      const s = await open(p.port);
      const got = collect(s);
      const closed = await s.closed;
      assert.equal(closed.code, 1006, `${what}: dropped`);
      assert.equal(got.length, 0, `${what}: nothing delivered`);
      await until(
        `${what}: the peer saw the close`,
        () => seen.length === cases.indexOf(cases.find((c) => c[0] === what)!) + 1,
      );
      assert.equal(seen.at(-1), code, what);
    }
  } finally {
    await p.close();
  }
});

Deno.test("socket: extra CAs are trusted besides the roots; an unknown CA is unreachable; terminate drops at once", async () => {
  const other = await generateEngineTls();
  const p = peer(async (peer) => {
    await peer.accept();
    await peer.frame();
  }, other);
  try {
    const err = await open(p.port).catch((e: unknown) => e);
    assert.ok(err instanceof WireError);
    assert.deepEqual(err.failure, { kind: "unreachable" });
    const trusting = wireClient({ caCerts: [other.caPem] });
    const s = await trusting.open({ endpoint: endpoint(p.port), signal: new AbortController().signal });
    s.terminate();
    assert.equal((await s.closed).code, 1006);
  } finally {
    await p.close();
  }
});

Deno.test("socket: a header value no HTTP header can carry fails before any connection", async () => {
  let connections = 0;
  const p = peer(() => {
    connections++;
    return Promise.resolve();
  });
  try {
    for (const bad of ["€", "a\nb", "\u0000"]) {
      const err = await open(p.port, { headers: [{ name: "X-Key", value: [enc(bad)] }] }).catch((
        e: unknown,
      ) => e);
      assert.ok(err instanceof WireError);
      assert.deepEqual(err.failure, { kind: "invalid" });
    }
    assert.equal(connections, 0);
  } finally {
    await p.close();
  }
});

Deno.test("socket: engine input yields to the timers after a busy run, never when it comes now and then", async () => {
  let now = 0;
  const turns = new InputTurns(4, 1, () => now);
  let timerRan = false;
  setTimeout(() => timerRan = true, 0); // a timer due meanwhile (a session's clock) runs before the input goes on
  // Messages 0.5 ms apart (a burst): the run reaches the budget after 4 ms and waits for a timer.
  const waits: (Promise<void> | null)[] = [];
  for (let i = 0; i < 12; i++) {
    waits.push(turns.next());
    now += 0.5;
  }
  const first = waits.findIndex((w) => w !== null);
  assert.equal(first, 8, "the first wait comes once 4 ms of input ran without a gap");
  assert.ok(waits.slice(first).every((w) => w === waits[first]), "everyone waits for the same timer");
  assert.equal(timerRan, false);
  await waits[first];
  assert.ok(timerRan, "a due timer ran before the input went on");
  assert.equal(turns.next(), null, "a new run starts after the wait");
  assert.equal(turns.yields, 1);
  // Input 2 ms apart (the loop free in between) never waits, however long it goes on.
  const calm = new InputTurns(4, 1, () => now);
  for (let i = 0; i < 50; i++) {
    assert.equal(calm.next(), null);
    now += 2;
  }
});
