import assert from "node:assert/strict";
import {
  alwaysServed,
  autoTransport,
  emptyEndpoints,
  isTransportKind,
  REQUESTED_TRANSPORTS,
  socketUrl,
  TRANSPORT_KINDS,
  transportEntry,
  transportsFilling,
} from "./transports.ts";

Deno.test("transport registry: the names, auto's preference and the fallback derive from the entries", () => {
  assert.deepEqual(TRANSPORT_KINDS, ["websocket_fmp4", "webrtc_sfu"]);
  assert.deepEqual(REQUESTED_TRANSPORTS, ["auto", "websocket_fmp4", "webrtc_sfu"]);
  assert.ok(TRANSPORT_KINDS.every(isTransportKind) && !isTransportKind("auto"));
  assert.deepEqual(alwaysServed(), ["websocket_fmp4"]);
  assert.equal(autoTransport(["websocket_fmp4", "webrtc_sfu"]), "webrtc_sfu");
  assert.equal(autoTransport(["webrtc_sfu"]), "webrtc_sfu");
  assert.equal(autoTransport([]), "websocket_fmp4");
});

Deno.test("transport registry: each entry has its own socket, and every stream_metadata field has a filler", () => {
  const paths = TRANSPORT_KINDS.map((k) => transportEntry(k).socketPath);
  const protocols = TRANSPORT_KINDS.flatMap((k) => transportEntry(k).subprotocols);
  assert.equal(new Set(paths).size, paths.length);
  assert.equal(new Set(protocols).size, protocols.length);
  for (const p of paths) assert.match(p, /^\/[a-z]+\/v0\/sessions\/\{session_id\}$/);
  for (const field of Object.keys(emptyEndpoints()) as (keyof ReturnType<typeof emptyEndpoints>)[]) {
    assert.ok(transportsFilling(field).length > 0, field);
  }
  assert.equal(
    socketUrl("websocket_fmp4", "https://svc.example/", "session:abc"),
    "wss://svc.example/media/v0/sessions/session:abc",
  );
  assert.equal(
    socketUrl("webrtc_sfu", "http://127.0.0.1:8787", "session:abc"),
    "ws://127.0.0.1:8787/sfu/v0/sessions/session:abc",
  );
});
