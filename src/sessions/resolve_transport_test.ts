import assert from "node:assert/strict";
import { ApiError } from "../errors.ts";
import { resolveTransport } from "./resolve_transport.ts";

Deno.test("transport resolution: auto prefers the SFU when there is one; webrtc_sfu without one fails closed", () => {
  const both = ["websocket_fmp4", "webrtc_sfu"] as const;
  const fmp4 = ["websocket_fmp4"] as const;
  assert.equal(resolveTransport("auto", both), "webrtc_sfu");
  assert.equal(resolveTransport("auto", fmp4), "websocket_fmp4");
  assert.equal(
    resolveTransport("auto", []),
    "websocket_fmp4",
    "no worker known: the always-served transport",
  );
  assert.equal(resolveTransport("websocket_fmp4", both), "websocket_fmp4");
  assert.equal(
    resolveTransport("websocket_fmp4", []),
    "websocket_fmp4",
    "placement answers when none is live",
  );
  assert.equal(resolveTransport("webrtc_sfu", both), "webrtc_sfu");
  assert.throws(
    () => resolveTransport("webrtc_sfu", fmp4),
    (e) => e instanceof ApiError && e.code === "SVC_SFU_NOT_CONFIGURED" && /not configured/.test(e.message),
  );
});
