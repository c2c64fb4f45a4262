/**
 * A UDP impairment proxy for tests and benches: it listens on a loopback port and relays every client's
 * datagrams to one upstream address (and the answers back), impairing each direction with its own
 * {@link Impairment} (loss, bursts, delay, jitter, reordering, a bandwidth cap; seeded).
 *
 * How it gets into Chromium's path to Janus: Janus (`testing/janus.ts`) offers one ICE address per port and
 * the service hands the browser TURN servers; so the proxy sits in front of coturn (`upstream` = coturn's
 * port, the TURN URL given to the service = the proxy's) and the page is forced to relay
 * (`iceTransportPolicy: "relay"`). Then every packet between the browser and Janus — ICE checks, DTLS,
 * SRTP audio and video, SCTP data channels, the microphone — crosses the proxy inside TURN, in both
 * directions, as a mobile client's packets cross its radio link before reaching a TURN server near it.
 * Each client gets its own upstream socket, so coturn sees one allocation per browser socket, as without it.
 *
 * @module
 */
import dgram from "node:dgram";
import { DepartureQueue, ImpairedLink, type Impairment, type ImpairmentStats } from "./impairment.ts";

/** Options of {@link startUdpProxy}. */
export interface UdpProxyOptions {
  /** Where datagrams go (coturn, or any UDP service). */
  upstream: { host: string; port: number };
  /** Client → upstream impairment (default: none). */
  up?: Impairment;
  /** Upstream → client impairment (default: none). */
  down?: Impairment;
  /** Seed of the random decisions (default 1); the two directions draw from streams derived from it. */
  seed?: number;
  /** Address to listen on (default 127.0.0.1). */
  host?: string;
  /** Port to listen on (default: a free one). */
  port?: number;
}

/** A running UDP proxy. */
export interface UdpProxy {
  host: string;
  port: number;
  /** Counters per direction. */
  stats(): { up: ImpairmentStats; down: ImpairmentStats; clients: number };
  /** Changes the impairments from the next packet on. */
  impair(spec: { up?: Impairment; down?: Impairment }): void;
  /** Closes every socket. Idempotent. */
  close(): Promise<void>;
}

interface Peer {
  socket: dgram.Socket;
  address: string;
  port: number;
}

/** Starts a UDP impairment proxy; resolves once it listens. */
export async function startUdpProxy(options: UdpProxyOptions): Promise<UdpProxy> {
  const seed = options.seed ?? 1;
  const up = new ImpairedLink(options.up ?? {}, seed * 2 + 1);
  const down = new ImpairedLink(options.down ?? {}, seed * 2 + 2);
  const queue = new DepartureQueue();
  const peers = new Map<string, Peer>();
  const front = dgram.createSocket("udp4");
  const host = options.host ?? "127.0.0.1";
  let closed = false;

  const peerFor = (address: string, port: number): Peer => {
    const key = `${address}:${port}`;
    let peer = peers.get(key);
    if (peer) return peer;
    const socket = dgram.createSocket("udp4");
    peer = { socket, address, port };
    peers.set(key, peer);
    socket.on("message", (msg: Uint8Array) => {
      if (closed) return;
      const v = down.decide(performance.now(), msg.length);
      if (v.kind === "send") queue.add(v.at, () => front.send(msg, port, address));
    });
    socket.on("error", () => {});
    socket.bind(0, "127.0.0.1");
    return peer;
  };

  front.on("message", (msg: Uint8Array, rinfo: { address: string; port: number }) => {
    if (closed) return;
    const peer = peerFor(rinfo.address, rinfo.port);
    const v = up.decide(performance.now(), msg.length);
    if (v.kind === "send") {
      queue.add(v.at, () => peer.socket.send(msg, options.upstream.port, options.upstream.host));
    }
  });
  front.on("error", () => {});
  await new Promise<void>((resolve, reject) => {
    front.once("error", reject);
    front.bind(options.port ?? 0, host, () => {
      front.off("error", reject);
      resolve();
    });
  });
  const port = front.address().port;
  return {
    host,
    port,
    stats: () => ({ up: { ...up.stats }, down: { ...down.stats }, clients: peers.size }),
    impair(spec) {
      if (spec.up) up.set(spec.up);
      if (spec.down) down.set(spec.down);
    },
    async close() {
      if (closed) return;
      closed = true;
      queue.close();
      const sockets = [front, ...[...peers.values()].map((p) => p.socket)];
      peers.clear();
      await Promise.all(sockets.map((s) =>
        new Promise<void>((r) => {
          try {
            s.close(() => r());
          } catch {
            r();
          }
        })
      ));
    },
  };
}
