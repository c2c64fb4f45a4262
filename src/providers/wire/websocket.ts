/**
 * WebSocket framing (RFC 6455 §5) over a byte socket: masked client frames written in order, frames parsed
 * from one growing read buffer (a whole message handed over as a view of it), fragmented messages,
 * ping/pong, the close handshake with valid codes and a bounded wait for the peer, UTF-8 checked text, the
 * size bound {@link MAX_MESSAGE_BYTES}, and protocol violations answered with their close code. Each message
 * read passes the process's fairness gate (`input_turns.ts`) first.
 *
 * The peer's input is acknowledged at once: every read that brought a message is answered with an
 * unsolicited, empty Pong (RFC 6455 §5.5.3: "A response to an unsolicited Pong frame is not expected")
 * unless a frame already waits to be written, whose segment carries the acknowledgement as well. An engine's
 * socket with Nagle's algorithm on (`Deno.serve`'s, for one) holds a small write while an earlier one is
 * unacknowledged, and this side's kernel delays a bare acknowledgement up to 40 ms (most likely the more
 * readily once this side has answered input quickly: Linux's interactive mode waits to piggyback the
 * acknowledgement on an answer; inferred from the timings below, not traced in the kernel). Without
 * Pongs a `response.started` followed by its first audio chunk held that chunk 42–45 ms and the next one
 * 20–25 ms; with Pongs for the first 100 ms of each burst only (until 5 Dec) one chunk of every burst, 60–120
 * ms into it, still came 19–31 ms late (the first acknowledgement delayed after the Pongs stopped), and
 * where it came after its audio was due the playout cut 20 ms of silence into the speech (5 of 32 WebCodecs
 * and 3 of 20 `webrtc_sfu` bursts of a real-time engine in one quick `bench:player` run); with a Pong for
 * every read the chunks of those bursts came at most 2 ms off their pace, a few 6–13 ms on a busy machine
 * (times at the service against a real-time engine's send times, `testing/realtime_engine.ts`). It costs one
 * small frame per read of input: about 50 a second (≈ 4 kB/s with TLS and TCP/IP headers) while an engine
 * speaks in 20 ms chunks, fewer when reads bring several messages.
 *
 * @module
 */
import type { Clock } from "../../clock.ts";
import { type Closed, WireSocket } from "./wire_socket.ts";
import { writeAll } from "./dial.ts";
import type { InputTurns } from "./input_turns.ts";

/** Where a connection is. */
type SocketState = "open" | "closing" | "closed";

/** The read buffer an engine connection starts with (it grows for larger messages). */
const READ_BUFFER_BYTES = 16 * 1024;

/** Largest message accepted from an engine (vendors send base64 audio inside JSON). */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
/** How long a closing connection waits for the peer to end the TCP connection after the close frames. */
const CLOSE_WAIT_MS = 1000;

/** Close codes a peer may send (RFC 6455 §7.4; 1004–1006 and 1015 are never sent). */
function validCloseCode(code: number): boolean {
  return (code >= 1000 && code <= 1014 && code !== 1004 && code !== 1005 && code !== 1006) ||
    (code >= 3000 && code <= 4999);
}

const utf8 = new TextDecoder("utf-8", { fatal: true });
const EMPTY = new Uint8Array(0);

/** A WebSocket connection over a Deno connection. */
export class ClientWebSocket extends WireSocket {
  #state: SocketState = "open";
  #closeSent = false;
  #received: Closed | null = null;
  readonly #out: Uint8Array[] = [];
  #buffered = 0;
  #writing = false;
  /** Fragments of the message being received. */
  #fragments: Uint8Array[] = [];
  #fragmentBytes = 0;
  #fragmentOpcode = 0;
  /** A message was read since the last read's acknowledgement (see the module documentation). */
  #read = false;
  readonly #stopWait = new AbortController();

  constructor(
    readonly conn: Deno.Conn,
    rest: Uint8Array,
    readonly protocol: string,
    readonly clock: Clock,
    /** The process's fairness gate of engine input. */
    readonly turns: InputTurns,
  ) {
    super();
    void this.#readLoop(rest);
  }

  get bufferedAmount(): number {
    return this.#buffered;
  }

  get isOpen(): boolean {
    return this.#state === "open";
  }

  send(data: string | Uint8Array): void {
    if (!this.isOpen) return;
    if (typeof data === "string") this.#frame(0x1, new TextEncoder().encode(data));
    else this.#frame(0x2, data);
  }

  ping(): boolean {
    if (this.isOpen) this.#frame(0x9, new Uint8Array(0));
    return true;
  }

  close(code: number, reason = ""): void {
    if (this.#state !== "open") return;
    this.#state = "closing";
    this.#sendClose(code, reason);
    // A peer that never ends the connection is dropped after a while.
    void this.clock.sleep(CLOSE_WAIT_MS * 2, this.#stopWait.signal).then(() => this.terminate(), () => {});
  }

  terminate(): void {
    this.#state = "closed";
    try {
      this.conn.close();
    } catch { /* closed already */ }
  }

  #sendClose(code: number, reason: string): void {
    if (this.#closeSent) return;
    this.#closeSent = true;
    const r = new TextEncoder().encode(reason).subarray(0, 123);
    const payload = new Uint8Array(code === 1005 ? 0 : 2 + r.length);
    if (code !== 1005) {
      new DataView(payload.buffer).setUint16(0, code);
      payload.set(r, 2);
    }
    this.#frame(0x8, payload, true);
  }

  /** Queues one masked frame. */
  #frame(opcode: number, payload: Uint8Array, force = false): void {
    if (!force && this.#closeSent) return;
    const len = payload.length;
    const extra = len < 126 ? 0 : len < 65536 ? 2 : 8;
    const out = new Uint8Array(2 + extra + 4 + len);
    out[0] = 0x80 | opcode;
    if (extra === 0) out[1] = 0x80 | len;
    else if (extra === 2) {
      out[1] = 0x80 | 126;
      new DataView(out.buffer).setUint16(2, len);
    } else {
      out[1] = 0x80 | 127;
      new DataView(out.buffer).setBigUint64(2, BigInt(len));
    }
    const maskAt = 2 + extra;
    crypto.getRandomValues(out.subarray(maskAt, maskAt + 4));
    const m0 = out[maskAt], m1 = out[maskAt + 1], m2 = out[maskAt + 2], m3 = out[maskAt + 3];
    const body = maskAt + 4;
    let i = 0;
    for (; i + 4 <= len; i += 4) {
      out[body + i] = payload[i] ^ m0;
      out[body + i + 1] = payload[i + 1] ^ m1;
      out[body + i + 2] = payload[i + 2] ^ m2;
      out[body + i + 3] = payload[i + 3] ^ m3;
    }
    for (; i < len; i++) out[body + i] = payload[i] ^ out[maskAt + (i & 3)];
    this.#out.push(out);
    this.#buffered += out.length;
    if (!this.#writing) void this.#flush();
  }

  async #flush(): Promise<void> {
    this.#writing = true;
    try {
      while (this.#out.length) {
        const next = this.#out[0];
        try {
          await writeAll(this.conn, next);
        } catch {
          this.#out.length = 0;
          this.#buffered = 0;
          this.terminate();
          return;
        }
        this.#out.shift();
        this.#buffered -= next.length;
      }
    } finally {
      this.#writing = false;
    }
  }

  /** A protocol violation of the peer: say why (close code) and drop the connection. */
  #violation(code: number): void {
    if (this.#state === "closed") return;
    this.#state = "closing";
    this.#sendClose(code, "");
    // Dropped once the close frame is out (or at once when nothing can be written).
    const drop = async () => {
      while (this.#writing) await new Promise((r) => setTimeout(r, 1));
      this.terminate();
    };
    void drop();
  }

  async #readLoop(rest: Uint8Array): Promise<void> {
    // Received bytes not parsed yet: acc[start, end), grown by doubling, compacted before growing (16 KB to
    // start: one per engine connection, and a session's engine sends 20–100 ms of audio at a time).
    let acc = new Uint8Array(Math.max(READ_BUFFER_BYTES, rest.length));
    acc.set(rest);
    let start = 0, end = rest.length;
    try {
      for (;;) {
        for (;;) {
          const n = this.#parse(acc.subarray(0, end), start);
          if (n < 0) break;
          start = n;
          if (this.#state === "closed") break;
          // A burst of input must not keep the process's timers (the sessions' media clocks) waiting.
          const turn = this.turns.next();
          if (turn) {
            await turn;
            // It may have been closed meanwhile (the state is read again after the wait).
            if ((this.#state as SocketState) === "closed") break;
          }
        }
        if (this.#state === "closed") break;
        if (this.#read) this.#acknowledge();
        if (start === end) start = end = 0;
        if (acc.length - end < READ_BUFFER_BYTES / 4) {
          const live = end - start;
          if (live + READ_BUFFER_BYTES / 4 > acc.length) {
            const next = new Uint8Array(acc.length * 2);
            next.set(acc.subarray(start, end));
            acc = next;
          } else acc.copyWithin(0, start, end);
          start = 0;
          end = live;
        }
        let n: number | null;
        try {
          n = await this.conn.read(acc.subarray(end));
        } catch {
          n = null;
        }
        if (n === null) break;
        end += n;
      }
    } finally {
      this.#state = "closed";
      this.#stopWait.abort();
      try {
        this.conn.close();
      } catch { /* closed already */ }
      this.released(this.#received ?? { code: 1006, reason: "" });
    }
  }

  /** Parses one frame of `acc` at `at`; returns where the next begins, or -1 when more bytes are needed. */
  #parse(acc: Uint8Array, at: number): number {
    if (acc.length - at < 2) return -1;
    const b0 = acc[at], b1 = acc[at + 1];
    const fin = (b0 & 0x80) !== 0, opcode = b0 & 0x0f;
    let len = b1 & 0x7f;
    let i = at + 2;
    if (len === 126) {
      if (acc.length - i < 2) return -1;
      len = (acc[i] << 8) | acc[i + 1];
      i += 2;
    } else if (len === 127) {
      if (acc.length - i < 8) return -1;
      const big = new DataView(acc.buffer, acc.byteOffset + i, 8).getBigUint64(0);
      if (big > BigInt(MAX_MESSAGE_BYTES)) return this.#violation(1009), acc.length;
      len = Number(big);
      i += 8;
    }
    if ((b0 & 0x70) !== 0 || (b1 & 0x80) !== 0) return this.#violation(1002), acc.length;
    const control = opcode >= 0x8;
    if (control && (!fin || len > 125)) return this.#violation(1002), acc.length;
    if (![0x0, 0x1, 0x2, 0x8, 0x9, 0xa].includes(opcode)) return this.#violation(1002), acc.length;
    if (!control && len + this.#fragmentBytes > MAX_MESSAGE_BYTES) return this.#violation(1009), acc.length;
    if (acc.length - i < len) return -1;
    // A view of the read buffer: control frames are answered or read at once, a message's piece is copied
    // when kept for the next ones, and a whole message is handed over as it is (see `setHandler`).
    const payload = acc.subarray(i, i + len);
    const next = i + len;
    if (this.#state === "closed") return next;
    switch (opcode) {
      case 0x9:
        if (this.#state === "open") this.#frame(0xa, payload);
        return next;
      case 0xa:
        this.onPong?.();
        return next;
      case 0x8:
        this.#onClose(payload);
        return next;
    }
    if (opcode === 0x0 ? this.#fragmentOpcode === 0 : this.#fragmentOpcode !== 0) {
      return this.#violation(1002), acc.length;
    }
    if (opcode !== 0x0) this.#fragmentOpcode = opcode;
    if (!fin) {
      this.#fragments.push(payload.slice());
      this.#fragmentBytes += payload.length;
      return next;
    }
    const kind = this.#fragmentOpcode;
    const parts = this.#fragments;
    this.#fragments = [];
    this.#fragmentOpcode = 0;
    const total = this.#fragmentBytes + payload.length;
    this.#fragmentBytes = 0;
    const message = parts.length === 0 ? payload : concat([...parts, payload], total);
    if (this.#state !== "open" && this.#state !== "closing") return next;
    let delivered: string | Uint8Array = message;
    if (kind === 0x1) {
      try {
        delivered = utf8.decode(message);
      } catch {
        return this.#violation(1007), acc.length;
      }
    }
    this.#read = true;
    this.deliver(delivered);
    return next;
  }

  /** After a read that brought messages: an unsolicited Pong (see the module documentation). */
  #acknowledge(): void {
    this.#read = false;
    // A frame waiting to be written carries the acknowledgement; one being written now may have left before
    // this read's bytes came (a TLS write resolves a turn or more after its bytes left), so it does not.
    if (!this.isOpen || this.#out.length > (this.#writing ? 1 : 0)) return;
    this.#frame(0xa, EMPTY);
  }

  #onClose(payload: Uint8Array): void {
    if (payload.length === 1) return this.#violation(1002);
    let code = 1005, reason = "";
    if (payload.length >= 2) {
      code = (payload[0] << 8) | payload[1];
      if (!validCloseCode(code)) return this.#violation(1002);
      try {
        reason = utf8.decode(payload.subarray(2));
      } catch {
        return this.#violation(1007);
      }
    }
    this.#received = { code, reason };
    if (this.#state === "open") this.#state = "closing";
    // The echo, then the peer ends the connection (or it is dropped after a while).
    this.#sendClose(code === 1005 ? 1005 : code, "");
    void this.clock.sleep(CLOSE_WAIT_MS, this.#stopWait.signal).then(() => this.terminate(), () => {});
  }
}

function concat(parts: Uint8Array[], total: number): Uint8Array {
  const out = new Uint8Array(total);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}
