import assert from "node:assert/strict";
import { durationS, eventIdFor, lifecycleEvent, lifecyclePayload } from "./lifecycle_events.ts";
import { LifecycleEvent } from "./schemas.ts";
import type { SessionRecord } from "./session_record.ts";

const base: SessionRecord = {
  session_id: "session:3kTMd9xq0bq1h7nYQ2Lw6A",
  project_id: "proj_a",
  status: "active",
  provider_type: "vendor2",
  transport: "webrtc_sfu",
  avatar_id: "ada",
  bg_id: "studio",
  webhook_url: "https://hooks.example.com/x",
  created_at: 1_000,
  started_at: 2_000,
  ended_at: null,
  warning: null,
  error_code: null,
  end_reason: null,
  chunks_rendered: 40,
  created_by: "svc_key_x",
  owner: "inst_a",
};

Deno.test("lifecycle events: every payload the builder makes is valid against its published schema", () => {
  const started = lifecyclePayload("session.started", base, 5_000);
  const ended = lifecyclePayload("session.ended", {
    ...base,
    status: "ended_with_warnings",
    ended_at: 62_500,
    warning: "The conversation engine connection was lost.",
    end_reason: "engine_failed",
  }, 70_000);
  const failed = lifecyclePayload("session.failed", {
    ...base,
    status: "failed",
    started_at: null,
    ended_at: 1_500,
    error_code: "SVC_PROVIDER_DOWNSTREAM_FAILED",
    end_reason: "start_failed",
  }, 9_000);
  for (const p of [started, ended, failed]) assert.deepEqual(LifecycleEvent.parse(p), p, p.type);
  assert.equal(ended.data.status, "ended_with_warnings");
  assert.deepEqual(
    { duration_s: "duration_s" in ended.data && ended.data.duration_s, timestamp: ended.timestamp },
    { duration_s: 60.5, timestamp: new Date(62_500).toISOString() },
  );
});

Deno.test("lifecycle events: ids derive from the session id; only a session with a webhook_url gets one", () => {
  assert.equal(eventIdFor(base.session_id, "start"), "msg_3kTMd9xq0bq1h7nYQ2Lw6A_start");
  assert.equal(lifecycleEvent("activating", base, 5)?.event_id, "msg_3kTMd9xq0bq1h7nYQ2Lw6A_start");
  assert.equal(lifecycleEvent("activating", { ...base, webhook_url: null }, 5), null);
  assert.equal(lifecycleEvent("active", { ...base, status: "ending" }, 5), null, "active → ending is quiet");
  assert.equal(durationS(null, 10_000), 0);
  assert.equal(durationS(2_000, 1_000), 0, "never negative");
});
