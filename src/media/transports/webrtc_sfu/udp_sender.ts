/**
 * The worker's RTP sender socket towards the SFU: bound before its first send, and sending **in order**.
 *
 * Why it matters: Deno 2.9.6's `node:dgram` starts each `send` as its own asynchronous operation, and
 * operations pending together may complete in any order: ten sends on a fresh socket arrive 9, 8, …, 0,
 * and on a loaded machine sends made well after the bind were seen reversed too. The first thing the SFU
 * transport sends is the session's opening keyframe (a burst of FU-A packets): reversed, Janus sees
 * descending sequence numbers, caches only the last packet as "the keyframe", and the first viewer of a new
 * session waits for the next keyframe (a second) instead of getting the cached one at once. So the sender
 * keeps one send in flight at a time and starts the next from the previous one's completion: packets leave
 * in the order they were given, whatever the load.
 *
 * @module
 */
import dgram from "node:dgram";

/** An RTP sender: packets leave in the order {@link RtpSender.send} was called. */
export interface RtpSender {
  /** Queues a datagram for `host:port`; never throws (a closed sender drops it). */
  send(packet: Uint8Array, port: number, host: string): void;
  /** Datagrams queued and not yet handed to the system. */
  readonly pending: number;
  /** Closes the socket (what is still queued is dropped); `done` runs once it is closed. */
  close(done?: () => void): void;
}

/** Most datagrams queued before new ones are dropped (a stalled socket must not grow the heap). */
const MAX_QUEUED = 4096;

/**
 * Opens a UDP socket for sending to `host` (its address family), bound to a port the system picks, and
 * resolves once it is bound. Rejects when it cannot be bound.
 */
export async function openRtpSender(host: string): Promise<RtpSender> {
  const socket = dgram.createSocket(host.includes(":") ? "udp6" : "udp4");
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once("error", reject);
      socket.bind(0, () => {
        socket.off("error", reject);
        resolve();
      });
    });
  } catch (err) {
    try {
      socket.close();
    } catch { /* never opened */ }
    throw err;
  }
  socket.on("error", () => {});
  return new OrderedSender(socket);
}

class OrderedSender implements RtpSender {
  readonly #socket: dgram.Socket;
  #queue: { packet: Uint8Array; port: number; host: string }[] = [];
  #head = 0;
  #inFlight = false;
  #closed = false;

  constructor(socket: dgram.Socket) {
    this.#socket = socket;
  }

  get pending(): number {
    return this.#queue.length - this.#head;
  }

  send(packet: Uint8Array, port: number, host: string): void {
    if (this.#closed || this.pending >= MAX_QUEUED) return;
    this.#queue.push({ packet, port, host });
    if (!this.#inFlight) this.#next();
  }

  #next = (): void => {
    if (this.#closed || this.#head >= this.#queue.length) {
      this.#inFlight = false;
      this.#queue = [];
      this.#head = 0;
      return;
    }
    const { packet, port, host } = this.#queue[this.#head++];
    this.#inFlight = true;
    try {
      this.#socket.send(packet, port, host, this.#next);
    } catch {
      // The socket is closing: nothing more leaves.
      this.#inFlight = false;
      this.#closed = true;
    }
  };

  close(done?: () => void): void {
    this.#closed = true;
    this.#queue = [];
    this.#head = 0;
    try {
      this.#socket.close(done);
    } catch {
      done?.();
    }
  }
}
