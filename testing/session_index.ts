/**
 * Test helpers for the listing index: seeding sessions in any status through the storage functions, and a
 * check that a project's index says exactly what its records say.
 *
 * @module
 */
import assert from "node:assert/strict";
import { insertSession, transitionSession } from "../src/kv/sessions.ts";
import type { SessionRecord } from "../src/vocabulary/session_record.ts";
import { indexKeys, type IndexValue, indexValue, viewOf } from "../src/kv/session_index.ts";
import type { ProviderType } from "../src/providers/definitions/provider_types.ts";
import type { TransportKind } from "../src/vocabulary/transports.ts";
import type { SessionStatus } from "../src/vocabulary/session_states.ts";
import { toView } from "../src/vocabulary/session_view.ts";
import { newSessionId } from "../src/ids.ts";

/** The statuses a session passes through on its way to `status` (after `created`). */
const PATHS: Record<SessionStatus, SessionStatus[]> = {
  created: [],
  activating: ["activating"],
  active: ["activating", "active"],
  ending: ["activating", "active", "ending"],
  ended: ["activating", "active", "ending", "ended"],
  ended_with_warnings: ["activating", "active", "ended_with_warnings"],
  failed: ["activating", "failed"],
};

/** Writes a session and moves it to `status` with the service's own storage functions. */
export async function seedSession(
  kv: Deno.Kv,
  o: {
    projectId: string;
    status: SessionStatus;
    provider?: ProviderType;
    transport?: TransportKind;
    createdAt: number;
    owner?: string | null;
  },
): Promise<SessionRecord> {
  const rec: SessionRecord = {
    session_id: newSessionId(),
    project_id: o.projectId,
    status: "created",
    provider_type: o.provider ?? "external_engine",
    transport: o.transport ?? "websocket_fmp4",
    avatar_id: "ada",
    bg_id: "studio",
    webhook_url: null,
    created_at: o.createdAt,
    started_at: null,
    ended_at: null,
    warning: null,
    error_code: null,
    end_reason: null,
    chunks_rendered: 0,
    created_by: "svc_key_seed",
    owner: o.owner ?? null,
  };
  await insertSession(kv, rec, 1_000_000);
  let cur = rec;
  let prev: SessionStatus = "created";
  for (const to of PATHS[o.status]) {
    const patch: Partial<SessionRecord> = to === "active"
      ? { started_at: o.createdAt + 500 }
      : to === "failed"
      ? { ended_at: o.createdAt + 400, error_code: "SVC_PROVIDER_UNAVAILABLE", end_reason: "start_failed" }
      : to === "ended" || to === "ended_with_warnings"
      ? { ended_at: o.createdAt + 9000, end_reason: "ended_by_api" }
      : {};
    const res = await transitionSession(kv, o.projectId, rec.session_id, [prev], to, patch, o.createdAt);
    assert.ok(res.ok, `${prev} → ${to}`);
    cur = res.record!;
    prev = to;
  }
  return cur;
}

/**
 * Asserts that the project's listing index holds exactly the entries of its records: for every record
 * its 4 keys with its value, standing for its public view, and nothing else.
 */
export async function assertIndexInStep(kv: Deno.Kv, projectId: string, what = ""): Promise<number> {
  const records = new Map<string, SessionRecord>();
  for await (const e of kv.list<SessionRecord>({ prefix: ["project", projectId, "session"] })) {
    records.set(e.value.session_id, e.value);
  }
  const expected = new Map<string, unknown>();
  for (const rec of records.values()) {
    for (const k of indexKeys(rec)) {
      expected.set(JSON.stringify(k), indexValue(rec));
      assert.deepEqual(viewOf(k, indexValue(rec)), toView(rec), "an entry stands for the record's view");
    }
  }
  const actual = new Map<string, unknown>();
  for await (const e of kv.list<IndexValue>({ prefix: ["project", projectId, "session_index"] })) {
    actual.set(JSON.stringify(e.key), e.value);
  }
  assert.deepEqual([...actual.keys()].sort(), [...expected.keys()].sort(), `index keys ${what}`);
  for (const [k, v] of expected) assert.deepEqual(actual.get(k), v, `index value ${k} ${what}`);
  return records.size;
}
