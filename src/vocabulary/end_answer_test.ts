import assert from "node:assert/strict";
import { endAnswer } from "./end_answer.ts";
import { EndedSession } from "./schemas.ts";
import type { SessionRecord } from "./session_record.ts";

const ended: SessionRecord = {
  session_id: "session:abc",
  project_id: "proj_a",
  status: "ended",
  provider_type: "external_engine",
  transport: "websocket_fmp4",
  avatar_id: "ada",
  bg_id: "studio",
  webhook_url: null,
  created_at: 0,
  started_at: 1_000,
  ended_at: 11_000,
  warning: null,
  error_code: null,
  end_reason: null,
  chunks_rendered: 250,
  created_by: "svc_key_x",
  owner: null,
};

Deno.test("end answer: from the final record, valid against the published schema, the reason given when none", () => {
  const answer = endAnswer(ended, "ended_by_api_forced");
  assert.deepEqual(EndedSession.parse(answer), answer);
  assert.deepEqual(answer, {
    session_id: "session:abc",
    status: "ended",
    ended_at: 11_000,
    chunks_rendered: 250,
    duration_s: 10,
    end_reason: "ended_by_api_forced",
  });
  const warned = endAnswer({
    ...ended,
    status: "ended_with_warnings",
    warning: "w",
    end_reason: "owner_lost",
  }, "x" as never);
  assert.equal(warned.warning, "w");
  assert.equal(warned.end_reason, "owner_lost", "the record's reason wins");
});
