/**
 * The connect deadline is the contract: a start that fails by timeout answers `504 SVC_PROVIDER_TIMEOUT`
 * within `SVC_PROVIDER_CONNECT_TIMEOUT_MS` + 500 ms, for every provider type and every point where an
 * engine can stall: TCP (a listener whose accept queue is full: the SYN is never answered), TLS (TCP
 * accepted, no TLS answer), the upgrade (TLS up, the HTTP upgrade never answered), the handshake (101, then
 * nothing: not even an answer to the close frame), and vendor3's signed-URL mint (the REST call never
 * answered). Measured from the request to the answer, with a short timeout.
 */
import assert from "node:assert/strict";
import { checkErrorBody, engineBody } from "../../testing/fixtures.ts";
import { testTls, withVendors } from "./_helpers.ts";

const TIMEOUT_MS = 700;
const BOUND_MS = TIMEOUT_MS + 500;

/** A stalling peer on 127.0.0.1: its port, and how to stop it. */
interface Stall {
  port: number;
  close(): Promise<void>;
}

/**
 * TCP that never completes: a socket listening with a backlog of 0 (through libc, Deno.listen takes no
 * backlog) whose one queue place is taken, so the kernel drops every further SYN.
 */
async function tcpStall(): Promise<Stall> {
  const libc = Deno.dlopen("libc.so.6", {
    socket: { parameters: ["i32", "i32", "i32"], result: "i32" },
    bind: { parameters: ["i32", "buffer", "u32"], result: "i32" },
    listen: { parameters: ["i32", "i32"], result: "i32" },
    getsockname: { parameters: ["i32", "buffer", "buffer"], result: "i32" },
    close: { parameters: ["i32"], result: "i32" },
  });
  const fd = libc.symbols.socket(2, /* AF_INET */ 1, /* SOCK_STREAM */ 0);
  const addr = new Uint8Array(16);
  addr[0] = 2; // sin_family AF_INET (little endian), port 0, 127.0.0.1
  addr.set([127, 0, 0, 1], 4);
  assert.equal(libc.symbols.bind(fd, addr, 16), 0, "bind");
  assert.equal(libc.symbols.listen(fd, 0), 0, "listen");
  libc.symbols.getsockname(fd, addr, new Uint8Array(new Uint32Array([16]).buffer));
  const port = (addr[2] << 8) | addr[3];
  const filler = await Deno.connect({ hostname: "127.0.0.1", port });
  return {
    port,
    close() {
      filler.close();
      libc.symbols.close(fd);
      libc.close();
      return Promise.resolve();
    },
  };
}

/** Accepts connections (plain TCP, or TLS when `tls`) and holds them, reading what comes, answering nothing. */
function silentListener(tls: boolean, onRequest?: (conn: Deno.Conn, head: string) => Promise<void>): Stall {
  const listener = tls
    ? Deno.listenTls({ hostname: "127.0.0.1", port: 0, cert: testTls.certPem, key: testTls.keyPem })
    : Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns = new Set<Deno.Conn>();
  const served = (async () => {
    for await (const conn of listener) {
      conns.add(conn);
      void (async () => {
        const buf = new Uint8Array(16 * 1024);
        let head = "";
        let answered = false;
        try {
          while (true) {
            const n = await conn.read(buf);
            if (n === null) break;
            head += new TextDecoder().decode(buf.subarray(0, n));
            if (!answered && onRequest && head.includes("\r\n\r\n")) {
              answered = true;
              await onRequest(conn, head);
            }
          }
        } catch { /* closed */ }
      })();
    }
  })();
  return {
    port: (listener.addr as Deno.NetAddr).port,
    async close() {
      listener.close();
      for (const c of conns) {
        try {
          c.close();
        } catch { /* closed */ }
      }
      await served.catch(() => {});
    },
  };
}

/** Completes the WebSocket upgrade by hand, then ignores everything (no ready message, no close reply). */
function handshakeStall(): Stall {
  return silentListener(true, async (conn, head) => {
    const key = /sec-websocket-key:\s*(\S+)/i.exec(head)?.[1] ?? "";
    const digest = await crypto.subtle.digest(
      "SHA-1",
      new TextEncoder().encode(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"),
    );
    const accept = new Uint8Array(digest).toBase64();
    await conn.write(new TextEncoder().encode(
      `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`,
    ));
  });
}

type Point = "tcp" | "tls" | "upgrade" | "handshake";
const POINTS: Record<Point, () => Promise<Stall> | Stall> = {
  tcp: tcpStall,
  tls: () => silentListener(false),
  upgrade: () => silentListener(true),
  handshake: handshakeStall,
};

/** Each provider type's env pointing at `port`, and a body. */
const PROVIDERS = {
  vendor1_realtime: (port: number) => ({
    env: { SVC_VENDOR1_REALTIME_URL: `wss://localhost:${port}/v1/realtime` },
    body: {
      provider_type: "vendor1_realtime",
      provider_config: { vendor1_realtime: { client_secret: "ek_x" } },
    },
  }),
  vendor2: (port: number) => ({
    env: { SVC_VENDOR2_URL: `wss://localhost:${port}/v1/agents/websocket` },
    body: {
      provider_type: "vendor2",
      provider_config: { vendor2: { access_token: "t", agent_id: "agent_1" } },
    },
  }),
  vendor3: (port: number) => ({
    env: { SVC_VENDOR3_URL: `wss://localhost:${port}/v1/convai/conversation` },
    body: { provider_type: "vendor3", provider_config: { vendor3: { agent_id: "agent_1" } } },
  }),
  external_engine: (port: number) => ({ env: {}, body: engineBody(`wss://localhost:${port}/v0`) }),
};

/** Starts a session against the stalling peer; checks the 504 and its time. */
async function expectTimeout(env: Record<string, string>, body: unknown, what: string) {
  await withVendors({ ...env, SVC_PROVIDER_CONNECT_TIMEOUT_MS: String(TIMEOUT_MS) }, async ({ create }) => {
    const started = performance.now();
    const res = await create(body);
    const took = performance.now() - started;
    checkErrorBody(res, { status: 504, code: "SVC_PROVIDER_TIMEOUT", retryable: true });
    assert.ok(took >= TIMEOUT_MS - 50, `${what}: answered after ${Math.round(took)} ms, before the deadline`);
    assert.ok(took <= BOUND_MS, `${what}: answered after ${Math.round(took)} ms (bound ${BOUND_MS} ms)`);
  });
}

for (const [type, provider] of Object.entries(PROVIDERS)) {
  for (const [point, start] of Object.entries(POINTS)) {
    Deno.test(`deadline ${type}: a stall at ${point} → 504 within the timeout + 500 ms`, async () => {
      const stall = await start();
      try {
        const { env, body } = provider(stall.port);
        await expectTimeout(env, body, `${type} ${point}`);
      } finally {
        await stall.close();
      }
    });
  }
}

Deno.test("deadline vendor3: a signed-URL mint that never answers → 504 within the timeout + 500 ms", async () => {
  const stall = silentListener(true);
  try {
    await expectTimeout(
      { SVC_VENDOR3_API_URL: `https://localhost:${stall.port}` },
      { provider_type: "vendor3", provider_config: { vendor3: { agent_id: "agent_1", api_key: "xi_key" } } },
      "vendor3 mint",
    );
  } finally {
    await stall.close();
  }
});
