import assert from "node:assert/strict";
import { ApiError } from "../errors.ts";
import { resolveTransport } from "./resolve_transport.ts";

Deno.test("transport resolution: auto prefers the SFU when there is one; webrtc_sfu without one fails closed", () => {
  assert.equal(resolveTransport("auto", true), "webrtc_sfu");
  assert.equal(resolveTransport("auto", false), "websocket_fmp4");
  assert.equal(resolveTransport("websocket_fmp4", true), "websocket_fmp4");
  assert.equal(resolveTransport("webrtc_sfu", true), "webrtc_sfu");
  assert.throws(
    () => resolveTransport("webrtc_sfu", false),
    (e) => e instanceof ApiError && e.code === "SVC_SFU_NOT_CONFIGURED",
  );
});
