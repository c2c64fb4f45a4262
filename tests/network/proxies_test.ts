/**
 * The impairment proxies drop and delay what they are told to: the link's decisions are checked exactly
 * (seeded), the proxies end to end with generous bounds (only lower bounds on delays: a busy machine may
 * add, never remove, time).
 */
import assert from "node:assert/strict";
import { ImpairedLink, seededRandom } from "../../testing/impairment.ts";
import { startUdpProxy } from "../../testing/udp_proxy.ts";
import { startTcpProxy } from "../../testing/tcp_proxy.ts";
import dgram from "node:dgram";

/** Waits until `ok()` or the deadline (generous: both cores may be busy). */
async function until(ok: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error("condition not reached in time");
    await new Promise((r) => setTimeout(r, 20));
  }
}

Deno.test("seeded random: same seed, same stream; different seeds differ", () => {
  const a = seededRandom(7), b = seededRandom(7), c = seededRandom(8);
  const xs = Array.from({ length: 5 }, a),
    ys = Array.from({ length: 5 }, b),
    zs = Array.from({ length: 5 }, c);
  assert.deepEqual(xs, ys);
  assert(xs.some((x, i) => x !== zs[i]));
  assert(xs.every((x) => x >= 0 && x < 1));
});

Deno.test("link: random loss near its rate, and replayable", () => {
  const run = () => {
    const l = new ImpairedLink({ loss: 0.03 }, 42);
    return Array.from({ length: 20_000 }, (_, i) => l.decide(i, 100).kind);
  };
  const a = run();
  assert.deepEqual(a, run());
  const lost = a.filter((k) => k === "drop").length / a.length;
  assert(lost > 0.02 && lost < 0.04, `lost ${lost}`);
});

Deno.test("link: burst loss comes in runs, random loss mostly alone", () => {
  const runs = (spec: ConstructorParameters<typeof ImpairedLink>[0]) => {
    const l = new ImpairedLink(spec, 3);
    const lens: number[] = [];
    let cur = 0;
    for (let i = 0; i < 50_000; i++) {
      if (l.decide(i, 100).kind === "drop") cur++;
      else if (cur) lens.push(cur), cur = 0;
    }
    return { mean: lens.reduce((s, x) => s + x, 0) / lens.length, lost: lens.reduce((s, x) => s + x, 0) };
  };
  const burst = runs({ burst: { enter: 0.01, leave: 0.25 } });
  const random = runs({ loss: 0.04 });
  assert(burst.mean > 3 && burst.mean < 5.5, `burst mean ${burst.mean}`);
  assert(random.mean < 1.2, `random mean ${random.mean}`);
});

Deno.test("link: delay, jitter within bounds, order kept unless asked", () => {
  const l = new ImpairedLink({ delayMs: 40, jitterMs: 20 }, 5);
  let last = 0;
  for (let i = 0; i < 1000; i++) {
    const v = l.decide(i * 20, 100);
    if (v.kind !== "send") throw new Error("dropped on a loss-free link");
    assert(v.at >= i * 20 + 20 - 1e-9 && v.at <= Math.max(last, i * 20 + 60) + 1e-9);
    assert(v.at >= last);
    last = v.at;
  }
  const r = new ImpairedLink({ delayMs: 40, jitterMs: 20, reorderByJitter: true }, 5);
  let inversions = 0, prev = 0;
  for (let i = 0; i < 1000; i++) {
    const v = r.decide(i * 5, 100);
    if (v.kind === "send" && v.at < prev) inversions++;
    if (v.kind === "send") prev = v.at;
  }
  assert(inversions > 50, `inversions ${inversions}`);
});

Deno.test("link: bandwidth cap serializes and drops past its queue", () => {
  const l = new ImpairedLink({ rateKbps: 400, queueMs: 100 }, 1);
  // 1000 bytes at 400 kbit/s: 20 ms each. 20 at once: the first 6 fit (0–100 ms of queue), the rest drop.
  const vs = Array.from({ length: 20 }, () => l.decide(0, 1000));
  const sent = vs.filter((v) => v.kind === "send");
  assert.deepEqual(sent.length, 6);
  assert.deepEqual(sent.map((v) => v.kind === "send" ? v.at : 0), [20, 40, 60, 80, 100, 120]);
  assert.deepEqual(l.stats.queueDropped, 14);
});

/** A UDP echo server; returns its port and a closer. */
async function udpEcho(): Promise<{ port: number; close: () => Promise<void> }> {
  const s = dgram.createSocket("udp4");
  s.on("message", (m: Uint8Array, r: { address: string; port: number }) => s.send(m, r.port, r.address));
  await new Promise<void>((r) => s.bind(0, "127.0.0.1", () => r()));
  return { port: s.address().port, close: () => new Promise<void>((r) => s.close(() => r())) };
}

Deno.test("udp proxy: drops what it is told to, delays both ways, answers reach the client", async () => {
  const echo = await udpEcho();
  const proxy = await startUdpProxy({
    upstream: { host: "127.0.0.1", port: echo.port },
    up: { loss: 0.2, delayMs: 30 },
    down: { delayMs: 30 },
    seed: 11,
  });
  const client = dgram.createSocket("udp4");
  const got = new Map<number, number>();
  const sentAt = new Map<number, number>();
  try {
    client.on("message", (m: Uint8Array) => {
      const id = new DataView(m.buffer, m.byteOffset).getUint32(0);
      got.set(id, performance.now() - sentAt.get(id)!);
    });
    await new Promise<void>((r) => client.bind(0, "127.0.0.1", () => r()));
    const n = 300;
    for (let i = 0; i < n; i++) {
      const b = new Uint8Array(200);
      new DataView(b.buffer).setUint32(0, i);
      sentAt.set(i, performance.now());
      client.send(b, proxy.port, "127.0.0.1");
      if (i % 20 === 19) await new Promise((r) => setTimeout(r, 5));
    }
    await until(() => proxy.stats().up.packets === n && got.size === proxy.stats().up.sent);
    const st = proxy.stats();
    assert.deepEqual(st.clients, 1);
    assert.deepEqual(st.up.lost + st.up.sent, n);
    assert(st.up.lost > n * 0.1 && st.up.lost < n * 0.3, `lost ${st.up.lost}`);
    assert.deepEqual(st.down.sent, st.up.sent);
    // Round trip through two delayed legs: at least 60 ms each.
    for (const rtt of got.values()) assert(rtt >= 59, `rtt ${rtt}`);
  } finally {
    await new Promise<void>((r) => client.close(() => r()));
    await proxy.close();
    await echo.close();
  }
});

Deno.test("udp proxy: reordering reorders, a cap spreads a burst out", async () => {
  const echo = await udpEcho();
  const proxy = await startUdpProxy({
    upstream: { host: "127.0.0.1", port: echo.port },
    up: { reorder: 0.3, reorderMs: 40, rateKbps: 800, queueMs: 2000 },
  });
  const client = dgram.createSocket("udp4");
  const order: number[] = [];
  const times: number[] = [];
  try {
    client.on("message", (m: Uint8Array) => {
      order.push(new DataView(m.buffer, m.byteOffset).getUint32(0));
      times.push(performance.now());
    });
    await new Promise<void>((r) => client.bind(0, "127.0.0.1", () => r()));
    const n = 60;
    for (let i = 0; i < n; i++) {
      const b = new Uint8Array(1000);
      new DataView(b.buffer).setUint32(0, i);
      client.send(b, proxy.port, "127.0.0.1");
    }
    await until(() => order.length === n);
    assert(order.some((x, i) => i > 0 && x < order[i - 1]), "nothing was reordered");
    // 60 × 1000 bytes at 800 kbit/s is 600 ms of serialization: the burst cannot arrive faster.
    assert(times[n - 1] - times[0] >= 500, `spread ${times[n - 1] - times[0]}`);
  } finally {
    await new Promise<void>((r) => client.close(() => r()));
    await proxy.close();
    await echo.close();
  }
});

Deno.test("tcp proxy: bytes intact and in order; delay and stalls hold the stream", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const echoing = (async () => {
    const c = await listener.accept();
    const buf = new Uint8Array(65536);
    for (;;) {
      const n = await c.read(buf).catch(() => null);
      if (n === null) break;
      for (let w = 0; w < n;) w += await c.write(buf.subarray(w, n));
    }
    c.close();
  })();
  const proxy = await startTcpProxy({
    upstream: { host: "127.0.0.1", port: (listener.addr as Deno.NetAddr).port },
    up: { delayMs: 40, jitterMs: 10 },
    down: { delayMs: 40 },
    seed: 9,
  });
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: proxy.port });
  try {
    // A small message's round trip crosses two delayed legs.
    const t0 = performance.now();
    await conn.write(new Uint8Array([1, 2, 3]));
    const small = new Uint8Array(3);
    let got = 0;
    while (got < 3) got += (await conn.read(small.subarray(got)))!;
    assert(performance.now() - t0 >= 69, `rtt ${performance.now() - t0}`);
    assert.deepEqual([...small], [1, 2, 3]);

    // Now every segment upstream is lost once: each costs a stall, nothing is lost or reordered.
    proxy.impair({ up: { loss: 1, stallMs: 100 } });
    const data = crypto.getRandomValues(new Uint8Array(4 * 1448));
    const t1 = performance.now();
    const reading = (async () => {
      const out = new Uint8Array(data.length);
      let n = 0;
      while (n < data.length) {
        const r = await conn.read(out.subarray(n));
        if (r === null) break;
        n += r;
      }
      return out.subarray(0, n);
    })();
    await conn.write(data);
    const back = await reading;
    assert.deepEqual(back, data);
    // Four segments, each held 100 ms behind the one before.
    assert(performance.now() - t1 >= 399, `stalled ${performance.now() - t1}`);
    assert.deepEqual(proxy.stats().up.stalls, 4);
  } finally {
    conn.close();
    await proxy.close();
    listener.close();
    await echoing;
  }
});
