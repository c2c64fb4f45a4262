/**
 * A TCP impairment proxy for tests and benches, put in front of the media WebSocket: it relays each
 * connection to one upstream address with delay and jitter per segment, and turns every segment the
 * {@link Impairment} would lose into a **stall**: TCP delivers in order, so a lost segment holds everything
 * behind it until its retransmission arrives (`stallMs` later, a retransmission timeout: 200 ms or more on
 * real stacks). That head-of-line blocking is what a lossy path does to a WebSocket, and what this proxy
 * reproduces; nothing is ever dropped or reordered. Seeded, like the UDP proxy.
 *
 * @module
 */
import { DepartureQueue, ImpairedLink, type Impairment } from "./impairment.ts";

/** A TCP path's impairment: loss becomes a stall of `stallMs` (default 250) for the stream behind it. */
export interface TcpImpairment extends Impairment {
  stallMs?: number;
}

/** Counters of one direction. */
export interface TcpDirectionStats {
  bytes: number;
  segments: number;
  stalls: number;
  /** Sum of the stalls' lengths, ms. */
  stalledMs: number;
}

/** Options of {@link startTcpProxy}. */
export interface TcpProxyOptions {
  upstream: { host: string; port: number };
  /** Client → upstream impairment. */
  up?: TcpImpairment;
  /** Upstream → client impairment. */
  down?: TcpImpairment;
  seed?: number;
  host?: string;
  port?: number;
  /** Segment size, bytes (default 1448: Ethernet MSS with timestamps). */
  mss?: number;
}

/** A running TCP proxy. */
export interface TcpProxy {
  host: string;
  port: number;
  stats(): { up: TcpDirectionStats; down: TcpDirectionStats; connections: number };
  impair(spec: { up?: TcpImpairment; down?: TcpImpairment }): void;
  close(): Promise<void>;
}

/** One direction of all connections: the link's decisions and counters are shared across connections. */
class Direction {
  readonly link: ImpairedLink;
  stallMs: number;
  readonly stats: TcpDirectionStats = { bytes: 0, segments: 0, stalls: 0, stalledMs: 0 };

  constructor(spec: TcpImpairment, seed: number) {
    this.link = new ImpairedLink(spec, seed);
    this.stallMs = spec.stallMs ?? 250;
  }

  set(spec: TcpImpairment): void {
    this.link.set(spec);
    this.stallMs = spec.stallMs ?? 250;
  }
}

/** Starts a TCP impairment proxy; resolves once it listens. */
export function startTcpProxy(options: TcpProxyOptions): Promise<TcpProxy> {
  const seed = options.seed ?? 1;
  const up = new Direction(options.up ?? {}, seed * 2 + 1);
  const down = new Direction(options.down ?? {}, seed * 2 + 2);
  const mss = options.mss ?? 1448;
  const host = options.host ?? "127.0.0.1";
  const listener = Deno.listen({ hostname: host, port: options.port ?? 0 });
  const conns = new Set<Deno.Conn>();
  const pumps = new Set<Promise<void>>();
  const queues = new Set<DepartureQueue>();
  let connections = 0;
  let closed = false;

  /** Copies `from` to `to` through `dir`; in order, each segment released at its time. */
  const pump = async (from: Deno.Conn, to: Deno.Conn, dir: Direction): Promise<void> => {
    const queue = new DepartureQueue();
    queues.add(queue);
    let lastAt = 0;
    let writes = Promise.resolve();
    let broken = false;
    const buf = new Uint8Array(64 * 1024);
    try {
      for (;;) {
        const n = await from.read(buf).catch(() => null);
        if (n === null || closed) break;
        const now = performance.now();
        for (let off = 0; off < n; off += mss) {
          const seg = buf.slice(off, Math.min(n, off + mss));
          dir.stats.bytes += seg.length;
          dir.stats.segments++;
          const v = dir.link.decide(now, seg.length);
          let at: number;
          if (v.kind === "send") at = v.at;
          else {
            // Lost: its retransmission comes a timeout later, and everything behind waits for it.
            const base = now + (dir.link.spec.delayMs ?? 0);
            at = Math.max(base, lastAt) + dir.stallMs;
            dir.stats.stalls++;
            dir.stats.stalledMs += dir.stallMs;
          }
          at = Math.max(at, lastAt);
          lastAt = at;
          queue.add(at, () => {
            writes = writes.then(async () => {
              if (broken) return;
              try {
                for (let w = 0; w < seg.length;) w += await to.write(seg.subarray(w));
              } catch {
                broken = true;
              }
            });
          });
        }
      }
      // Deliver what is queued, then half-close the other side.
      while (queue.size && !closed && !broken) await new Promise((r) => setTimeout(r, 5));
      await writes;
    } finally {
      queue.close();
      queues.delete(queue);
      try {
        await (to as Deno.TcpConn).closeWrite();
      } catch { /* closed */ }
    }
  };

  const serve = async (client: Deno.Conn) => {
    let server: Deno.Conn;
    try {
      server = await Deno.connect({ hostname: options.upstream.host, port: options.upstream.port });
    } catch {
      client.close();
      return;
    }
    conns.add(client);
    conns.add(server);
    connections++;
    await Promise.all([pump(client, server, up), pump(server, client, down)]);
    for (const c of [client, server]) {
      conns.delete(c);
      try {
        c.close();
      } catch { /* closed */ }
    }
  };

  const accepting = (async () => {
    for (;;) {
      let c: Deno.Conn;
      try {
        c = await listener.accept();
      } catch {
        return;
      }
      const p = serve(c).finally(() => pumps.delete(p));
      pumps.add(p);
    }
  })();

  return Promise.resolve({
    host,
    port: (listener.addr as Deno.NetAddr).port,
    stats: () => ({ up: { ...up.stats }, down: { ...down.stats }, connections }),
    impair(spec) {
      if (spec.up) up.set(spec.up);
      if (spec.down) down.set(spec.down);
    },
    async close() {
      if (closed) return;
      closed = true;
      listener.close();
      await accepting;
      for (const q of queues) q.close();
      for (const c of conns) {
        try {
          c.close();
        } catch { /* closed */ }
      }
      await Promise.allSettled([...pumps]);
    },
  });
}
