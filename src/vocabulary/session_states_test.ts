import assert from "node:assert/strict";
import { lifecycleEvent } from "./lifecycle_events.ts";
import type { SessionRecord } from "./session_record.ts";
import {
  edge,
  freesSlot,
  isEnded,
  isLive,
  LIVE_STATUSES,
  SESSION_STATUSES,
  TERMINAL_STATUSES,
  TRANSITIONS,
} from "./session_states.ts";

const rec = (status: SessionRecord["status"]): SessionRecord => ({
  session_id: "session:abc",
  project_id: "proj_a",
  status,
  provider_type: "external_engine",
  transport: "websocket_fmp4",
  avatar_id: null,
  bg_id: null,
  webhook_url: "https://hooks.example.com/x",
  created_at: 1,
  started_at: 2,
  ended_at: 3,
  warning: null,
  error_code: null,
  end_reason: null,
  chunks_rendered: 0,
  created_by: "svc_key_x",
  owner: null,
});

Deno.test("state table: terminal statuses have no way out; every edge's event is the one the table names", () => {
  for (const t of TERMINAL_STATUSES) assert.deepEqual(TRANSITIONS[t], {});
  const seen: string[] = [];
  for (const from of SESSION_STATUSES) {
    for (const to of SESSION_STATUSES) {
      const e = edge(from, to);
      const event = lifecycleEvent(from, rec(to), 10);
      if (!e) continue;
      seen.push(`${from}→${to}:${e.emits ?? "-"}`);
      assert.equal(event?.type ?? null, e.emits, `${from} → ${to}`);
      assert.equal(freesSlot(from, to), TERMINAL_STATUSES.includes(to));
    }
  }
  assert.deepEqual(seen, [
    "created→activating:-",
    "created→failed:session.failed",
    "activating→active:session.started",
    "activating→failed:session.failed",
    "active→ending:-",
    "active→ended:session.ended",
    "active→ended_with_warnings:session.ended",
    "ending→ended:session.ended",
    "ending→ended_with_warnings:session.ended",
  ]);
});

Deno.test("state table: every status is live or terminal, never both; ended is the terminal after active", () => {
  for (const s of SESSION_STATUSES) {
    assert.notEqual(isLive(s), TERMINAL_STATUSES.includes(s), s);
    assert.equal(isLive(s), LIVE_STATUSES.includes(s), s);
  }
  assert.deepEqual(SESSION_STATUSES.filter(isEnded), ["ended", "ended_with_warnings"]);
});
