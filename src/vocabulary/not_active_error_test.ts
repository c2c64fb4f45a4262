import assert from "node:assert/strict";
import { notActiveError } from "./not_active_error.ts";
import { SESSION_STATUSES } from "./session_states.ts";

Deno.test("not active: 404 for none, 409 SVC_SESSION_ENDED once ended, 409 SVC_SESSION_CONFLICT otherwise", () => {
  assert.equal(notActiveError(null).status, 404);
  assert.equal(notActiveError(null).code, "SVC_SESSION_NOT_FOUND");
  const codes = Object.fromEntries(
    SESSION_STATUSES.map((status) => [status, notActiveError({ status }).code]),
  );
  assert.deepEqual(codes, {
    created: "SVC_SESSION_CONFLICT",
    activating: "SVC_SESSION_CONFLICT",
    active: "SVC_SESSION_CONFLICT",
    ending: "SVC_SESSION_CONFLICT",
    ended: "SVC_SESSION_ENDED",
    ended_with_warnings: "SVC_SESSION_ENDED",
    failed: "SVC_SESSION_CONFLICT",
  });
  for (const status of SESSION_STATUSES) assert.equal(notActiveError({ status }).status, 409);
  assert.equal(notActiveError({ status: "ending" }).message, "The session is ending, not active.");
});
