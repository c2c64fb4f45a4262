import assert from "node:assert/strict";
import { Session } from "./schemas.ts";
import type { SessionRecord } from "./session_record.ts";
import { toView } from "./session_view.ts";

const live: SessionRecord = {
  session_id: "session:abc",
  project_id: "proj_a",
  status: "active",
  provider_type: "vendor3",
  transport: "websocket_fmp4",
  avatar_id: "ben",
  bg_id: "office",
  webhook_url: "https://hooks.example.com/x",
  created_at: 10,
  started_at: 20,
  ended_at: null,
  warning: null,
  error_code: null,
  end_reason: null,
  chunks_rendered: 3,
  created_by: "svc_key_x",
  owner: "inst_a",
  end_request: null,
  stream: { media_url: "ws://x/media", sfu_endpoint: null },
};

Deno.test("session view: the public fields only, unset times and reason left out, valid against the schema", () => {
  const view = toView(live);
  assert.deepEqual(view, {
    session_id: "session:abc",
    status: "active",
    provider_type: "vendor3",
    transport: "websocket_fmp4",
    created_at: 10,
    started_at: 20,
  });
  assert.deepEqual(Session.parse(view), view);
  const ended = toView({ ...live, status: "ended", ended_at: 30, end_reason: "max_duration" });
  assert.deepEqual([ended.ended_at, ended.end_reason], [30, "max_duration"]);
  assert.deepEqual(Session.parse(ended), ended);
});
