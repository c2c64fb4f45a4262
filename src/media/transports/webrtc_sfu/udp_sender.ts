/**
 * The worker's RTP sender socket towards the SFU, opened **bound**.
 *
 * Why it matters: a `node:dgram` socket that is sent on before it is bound binds itself implicitly and
 * queues the sends meanwhile, and Deno 2.9.6 delivers such queued sends in reverse order (ten sends on a
 * fresh socket arrive 9, 8, …, 0). The same happens to sends made in the `bind` callback itself: the socket
 * takes the sends directly only once the bind has settled, one turn of the event loop later. The first
 * thing the SFU transport sends is the session's opening keyframe (a burst of FU-A packets): reversed,
 * Janus sees descending sequence numbers, caches only the last packet as "the keyframe", and the first
 * viewer of a new session waits for the next keyframe (a second) instead of getting the cached one at once.
 * {@link openRtpSender} resolves only when the socket sends in order.
 *
 * @module
 */
import dgram from "node:dgram";

/**
 * Opens a UDP socket for sending to `host` (its address family), bound to a port the system picks, and
 * resolves once sends on it go out in the order they are made. Rejects when it cannot be bound.
 */
export async function openRtpSender(host: string): Promise<dgram.Socket> {
  const socket = dgram.createSocket(host.includes(":") ? "udp6" : "udp4");
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once("error", reject);
      socket.bind(0, () => {
        socket.off("error", reject);
        resolve();
      });
    });
    // The bind callback runs before the socket has left its binding state: sends made now would still be
    // queued (and reversed). One macrotask later it is bound for good.
    await new Promise((resolve) => setTimeout(resolve, 0));
  } catch (err) {
    try {
      socket.close();
    } catch { /* never opened */ }
    throw err;
  }
  socket.on("error", () => {});
  return socket;
}
