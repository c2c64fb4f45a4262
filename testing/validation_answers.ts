/**
 * Runs create-session bodies (bytes) through a checkout's API (its own harness, with bridges that
 * answer every start with `503 SVC_PROVIDER_UNAVAILABLE`) and returns each answer's status, code and
 * message — to compare the validation of two checkouts (tests/api/credential_validation_test.ts).
 *
 * @module
 */
import { FIXED_NOW } from "./credential_bodies.ts";

/** One answer: status, code and message (what a client sees of a refusal). */
export type Answer = [status: number, code: string, message: string];

/** A checkout's test harness and its always-unavailable bridge (its own modules). */
export interface Checkout {
  // deno-lint-ignore no-explicit-any
  createHarness(options: any): Promise<any>;
  UnavailableBridge: new () => unknown;
}

/** The harness modules of the checkout at `root` (an absolute path), imported dynamically. */
export async function checkoutAt(root: string): Promise<Checkout> {
  const base = new URL(`file://${root.replace(/\/?$/, "/")}`);
  // The harness moved from tests/helpers/ to testing/ (issue 19): either place.
  let harness = new URL("testing/harness.ts", base);
  try {
    await Deno.stat(harness);
  } catch {
    harness = new URL("tests/helpers/harness.ts", base);
  }
  const { createHarness } = await import(harness.href);
  // The always-unavailable bridge moved from src/providers/unavailable.ts (and was a "connector") in issue 19.
  let bridge = new URL("testing/unavailable_bridge.ts", base);
  try {
    await Deno.stat(bridge);
  } catch {
    bridge = new URL("src/providers/unavailable.ts", base);
  }
  const module = await import(bridge.href);
  return { createHarness, UnavailableBridge: module.UnavailableBridge ?? module.UnavailableConnector };
}

/** The answers of a checkout to `bodies`, in order. */
export async function answersFor(checkout: Checkout, bodies: Uint8Array<ArrayBuffer>[]): Promise<Answer[]> {
  const { createHarness, UnavailableBridge } = checkout;
  const unavailable = new UnavailableBridge();
  const all = {
    vendor1_realtime: unavailable,
    vendor2: unavailable,
    vendor3: unavailable,
    external_engine: unavailable,
  };
  const h = await createHarness({
    env: {
      SVC_RATE_LIMIT_PER_MINUTE: "0",
      SVC_MAX_CONCURRENT_SESSIONS: "100000",
      SVC_VENDOR3_SIGNED_URL_HOSTS: "api.elevenlabs.io,api.eu.residency.elevenlabs.io,localhost,127.0.0.1",
    },
    // `bridges` since issue 19 part two, `connectors` before: each checkout's harness reads its own.
    bridges: all,
    connectors: all,
  });
  try {
    // The generated signatures were minted relative to FIXED_NOW (with minutes of margin either way).
    h.clock.advance(FIXED_NOW - h.clock.now());
    const key: string = await h.key("proj_validation");
    const out: Answer[] = [];
    for (const body of bodies) {
      const res: Response = await h.fetch(
        new Request("http://svc.test/v1/sessions", {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body,
        }),
      );
      const text = await res.text();
      let parsed: { code?: string; message?: string } = {};
      try {
        parsed = JSON.parse(text);
      } catch { /* not JSON */ }
      out.push([res.status, parsed.code ?? "", parsed.message ?? text.slice(0, 200)]);
    }
    return out;
  } finally {
    await h.close();
  }
}
