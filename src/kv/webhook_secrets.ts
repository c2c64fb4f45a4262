/**
 * Per-project webhook signing secrets: created on first use, rotated by operators. After a rotation the
 * previous secret stays valid for a grace period, during which deliveries carry both signatures. New secrets
 * come from the caller (`generateWebhookSecret` of `src/webhooks/sign.ts`): storage knows their place, not
 * their format.
 *
 * @module
 */
import { casLoop, kvOp } from "./guard.ts";
import { webhookSecretKey } from "./keys.ts";

/** How long the previous secret keeps signing deliveries after a rotation: 24 hours. */
export const ROTATION_GRACE_MS = 24 * 3600_000;

/** The stored signing secret of a project. */
export interface WebhookSecretRecord {
  /** The secret deliveries are signed with (`whsec_…`). */
  current: string;
  /** The secret before the last rotation, still signing until `previous_until`. */
  previous: string | null;
  /** Unix ms until which `previous` also signs deliveries. */
  previous_until: number | null;
  created_at: number;
  rotated_at: number | null;
}

/**
 * Reads the project's secret record and writes `next(current)` with compare-and-set; when `next` returns
 * the current record unchanged, nothing is written.
 */
async function updateSecret(
  kv: Deno.Kv,
  projectId: string,
  next: (current: WebhookSecretRecord | null) => WebhookSecretRecord,
): Promise<WebhookSecretRecord> {
  return await kvOp(async () => {
    let out: WebhookSecretRecord | null = null;
    await casLoop(async () => {
      const entry = await kv.get<WebhookSecretRecord>(webhookSecretKey(projectId));
      const rec = next(entry.value);
      if (rec === entry.value) {
        out = rec;
        return true;
      }
      const res = await kv.atomic().check(entry).set(webhookSecretKey(projectId), rec).commit();
      if (res.ok) out = rec;
      return res.ok;
    });
    return out!;
  });
}

/** The project's secret, creating it (with `generate`) if the project has none yet. */
export async function getOrCreateWebhookSecret(
  kv: Deno.Kv,
  projectId: string,
  now: number,
  generate: () => string,
): Promise<WebhookSecretRecord> {
  return await updateSecret(kv, projectId, (cur) =>
    cur ?? {
      current: generate(),
      previous: null,
      previous_until: null,
      created_at: now,
      rotated_at: null,
    });
}

/** Replaces the project's secret with `generate()`; the old one keeps signing for {@link ROTATION_GRACE_MS}. */
export async function rotateWebhookSecret(
  kv: Deno.Kv,
  projectId: string,
  now: number,
  generate: () => string,
): Promise<WebhookSecretRecord> {
  return await updateSecret(kv, projectId, (cur) => ({
    current: generate(),
    previous: cur?.current ?? null,
    previous_until: cur ? now + ROTATION_GRACE_MS : null,
    created_at: cur?.created_at ?? now,
    rotated_at: now,
  }));
}

/** The secrets a delivery at `now` is signed with: the current one, and the previous one in its grace. */
export function signingSecrets(rec: WebhookSecretRecord, now: number): string[] {
  return rec.previous && rec.previous_until !== null && now < rec.previous_until
    ? [rec.current, rec.previous]
    : [rec.current];
}
