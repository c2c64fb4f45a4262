/**
 * A real https webhook receiver on loopback (TLS from the test CA) that records every delivery and answers
 * as the test says.
 *
 * @module
 */
import { DEADLINE_MS } from "./deadline.ts";

/** One request the receiver got. */
export interface ReceivedWebhook {
  id: string;
  timestamp: string;
  signature: string;
  headers: Headers;
  /** The raw body. */
  body: string;
  /** Path of the request URL. */
  path: string;
  /** Status answered (0 while hanging, or if the connection was dropped). */
  status: number;
}

/** How the receiver answers the n-th request (0-based): a status, or "hang" (no answer until closed). */
export type ReceiverBehaviour = (req: ReceivedWebhook, n: number) => number | "hang" | Response;

/** A running receiver. */
export interface WebhookReceiver {
  /** `https://localhost:<port>/hook` */
  url: string;
  port: number;
  /** Every request, in arrival order. */
  received: ReceivedWebhook[];
  /** Requests answered 2xx. */
  accepted(): ReceivedWebhook[];
  /** Changes how later requests are answered. */
  behave(b: ReceiverBehaviour): void;
  /** Waits (bounded) until `cond` holds. */
  waitFor(cond: () => boolean, ms?: number, what?: string): Promise<void>;
  close(): Promise<void>;
}

/** Starts a receiver that answers 204 unless told otherwise. */
export function startWebhookReceiver(
  tls: { certPem: string; keyPem: string },
  behaviour: ReceiverBehaviour = () => 204,
  port = 0,
): WebhookReceiver {
  let behave = behaviour;
  const received: ReceivedWebhook[] = [];
  const hanging = new Set<() => void>();
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port,
    cert: tls.certPem,
    key: tls.keyPem,
    onListen: () => {},
  }, async (req) => {
    const rec: ReceivedWebhook = {
      id: req.headers.get("webhook-id") ?? "",
      timestamp: req.headers.get("webhook-timestamp") ?? "",
      signature: req.headers.get("webhook-signature") ?? "",
      headers: new Headers(req.headers),
      body: await req.text(),
      path: new URL(req.url).pathname,
      status: 0,
    };
    const n = received.push(rec) - 1;
    const answer = behave(rec, n);
    if (answer === "hang") {
      await new Promise<void>((r) => hanging.add(r));
      return new Response(null, { status: 503 });
    }
    const res = answer instanceof Response ? answer : new Response(null, { status: answer });
    rec.status = res.status;
    return res;
  });
  return {
    url: `https://localhost:${server.addr.port}/hook`,
    port: server.addr.port,
    received,
    accepted: () => received.filter((r) => r.status >= 200 && r.status < 300),
    behave(b) {
      behave = b;
    },
    async waitFor(cond, ms = DEADLINE_MS, what = "condition") {
      const until = Date.now() + ms;
      while (!cond()) {
        if (Date.now() > until) throw new Error(`receiver: ${what} not met within ${ms} ms`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    async close() {
      for (const r of hanging) r();
      hanging.clear();
      await server.shutdown();
    },
  };
}

/** Polls `cond` every 10 ms for at most `ms`; throws naming `what` if it never holds. */
export async function eventually(
  cond: () => boolean | Promise<boolean>,
  ms = DEADLINE_MS,
  what = "condition",
) {
  const until = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > until) throw new Error(`${what} not met within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
