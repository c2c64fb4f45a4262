import assert from "node:assert/strict";
import { END_REASONS } from "./end_reasons.ts";
import { PROVIDER_TYPES } from "../providers/definitions/provider_types.ts";
import { EndReason, ProviderType, SessionStatus, Transport } from "./schemas.ts";
import { SESSION_STATUSES } from "./session_states.ts";
import { REQUESTED_TRANSPORTS, TRANSPORT_KINDS } from "./transports.ts";

Deno.test("schemas: the published enums are the vocabulary's names", () => {
  assert.deepEqual(SessionStatus.options, [...SESSION_STATUSES]);
  assert.deepEqual(EndReason.options, [...END_REASONS]);
  assert.deepEqual(ProviderType.options, [...PROVIDER_TYPES]);
  assert.deepEqual(Transport.options, ["auto", ...TRANSPORT_KINDS]);
  assert.deepEqual(Transport.options, [...REQUESTED_TRANSPORTS]);
});
