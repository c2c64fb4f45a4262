/**
 * Project avatars in KV: the record, the drawing of an uploaded avatar cut into parts under one KV value's
 * size (written in the same atomic commit as the record, so a reader sees all of it or none), the listing
 * index (newest first) and the per-project count the quota is checked against, all under the project's id.
 * A deleted avatar leaves the listing and the count at once; its record and drawing stay as a tombstone for
 * `keepMs` (the longest a session that runs it can last), then expire.
 *
 * @module
 */
import type { AvatarStyleParams } from "../vocabulary/avatar_style.ts";
import { avatarCountKey, avatarIndexKey, avatarIndexPrefix, avatarKey, avatarSvgPartKey } from "./keys.ts";

/** Bytes of one part of a drawing (under Deno KV's 64 KiB value limit). */
export const SVG_PART_BYTES = 60_000;

/** A project avatar as stored. */
export interface AvatarRecord {
  avatar_id: string;
  name: string;
  source: "style" | "svg";
  created_at: number;
  /** The style (defaults filled in), for `source: "style"`. */
  style?: AvatarStyleParams;
  /** Parts and bytes of the sanitised drawing, for `source: "svg"`. */
  svg_parts?: number;
  svg_bytes?: number;
  /** Set when deleted: the record is a tombstone kept for running sessions. */
  deleted_at?: number;
}

/** Why a create was not written. */
export type CreateOutcome = { ok: true } | { ok: false; reason: "quota" };

/**
 * Writes a new avatar (record, drawing parts, index entry, count) in one atomic commit, unless the project
 * already holds `quota` avatars.
 */
export async function createAvatar(
  kv: Deno.Kv,
  projectId: string,
  rec: AvatarRecord,
  svg: string | null,
  quota: number,
): Promise<CreateOutcome> {
  const bytes = svg === null ? null : new TextEncoder().encode(svg);
  const parts = bytes === null ? 0 : Math.max(1, Math.ceil(bytes.length / SVG_PART_BYTES));
  const stored: AvatarRecord = bytes === null ? rec : { ...rec, svg_parts: parts, svg_bytes: bytes.length };
  for (;;) {
    const count = await kv.get<Deno.KvU64>(avatarCountKey(projectId));
    if (Number(count.value?.value ?? 0n) >= quota) return { ok: false, reason: "quota" };
    const op = kv.atomic()
      .check(count)
      .check({ key: avatarKey(projectId, rec.avatar_id), versionstamp: null })
      .set(avatarKey(projectId, rec.avatar_id), stored)
      .set(avatarIndexKey(projectId, rec.created_at, rec.avatar_id), true)
      .sum(avatarCountKey(projectId), 1n);
    for (let i = 0; i < parts; i++) {
      op.set(
        avatarSvgPartKey(projectId, rec.avatar_id, i),
        bytes!.slice(i * SVG_PART_BYTES, (i + 1) * SVG_PART_BYTES),
      );
    }
    if ((await op.commit()).ok) return { ok: true };
  }
}

/** The record of an avatar (tombstones included: check `deleted_at`), or null. */
export async function getAvatar(
  kv: Deno.Kv,
  projectId: string,
  avatarId: string,
): Promise<AvatarRecord | null> {
  return (await kv.get<AvatarRecord>(avatarKey(projectId, avatarId))).value;
}

/** The sanitised drawing of an uploaded avatar, or null when a part is missing (expired). */
export async function readAvatarSvg(
  kv: Deno.Kv,
  projectId: string,
  rec: AvatarRecord,
): Promise<string | null> {
  if (rec.source !== "svg" || !rec.svg_parts) return null;
  const keys = Array.from({ length: rec.svg_parts }, (_, i) => avatarSvgPartKey(projectId, rec.avatar_id, i));
  const out = new Uint8Array(rec.svg_bytes ?? 0);
  let at = 0;
  // getMany reads at most 10 keys at a time.
  for (let i = 0; i < keys.length; i += 10) {
    for (const e of await kv.getMany<Uint8Array[]>(keys.slice(i, i + 10))) {
      if (!(e.value instanceof Uint8Array) || at + e.value.length > out.length) return null;
      out.set(e.value, at);
      at += e.value.length;
    }
  }
  return at === out.length ? new TextDecoder().decode(out) : null;
}

/** One page of the project's avatars, newest first, after `after` (the previous page's last). */
export async function listAvatars(
  kv: Deno.Kv,
  projectId: string,
  opts: { limit: number; after: { createdAt: number; sessionId: string } | null },
): Promise<{ items: AvatarRecord[]; next: { createdAt: number; sessionId: string } | null }> {
  const prefix = avatarIndexPrefix(projectId);
  const selector = opts.after
    ? { prefix, end: avatarIndexKey(projectId, opts.after.createdAt, opts.after.sessionId) }
    : { prefix };
  const ids: [number, string][] = [];
  for await (const e of kv.list<true>(selector, { reverse: true, limit: opts.limit + 1 })) {
    ids.push([e.key[3] as number, e.key[4] as string]);
  }
  const page = ids.slice(0, opts.limit);
  const items: AvatarRecord[] = [];
  for (let i = 0; i < page.length; i += 10) {
    const got = await kv.getMany<AvatarRecord[]>(
      page.slice(i, i + 10).map(([, id]) => avatarKey(projectId, id)),
    );
    for (const e of got) if (e.value && !e.value.deleted_at) items.push(e.value);
  }
  const last = page[page.length - 1];
  return { items, next: ids.length > opts.limit && last ? { createdAt: last[0], sessionId: last[1] } : null };
}

/**
 * Deletes an avatar: out of the listing and the count at once; its record (marked deleted) and drawing
 * expire after `keepMs`. False when there is no such live avatar.
 */
export async function deleteAvatar(
  kv: Deno.Kv,
  projectId: string,
  avatarId: string,
  now: number,
  keepMs: number,
): Promise<boolean> {
  for (;;) {
    const entry = await kv.get<AvatarRecord>(avatarKey(projectId, avatarId));
    const rec = entry.value;
    if (!rec || rec.deleted_at) return false;
    const op = kv.atomic()
      .check(entry)
      .set(avatarKey(projectId, avatarId), { ...rec, deleted_at: now }, { expireIn: keepMs })
      .delete(avatarIndexKey(projectId, rec.created_at, avatarId))
      .sum(avatarCountKey(projectId), 0xffffffffffffffffn); // −1 (the sum wraps modulo 2^64)
    for (let i = 0; i < (rec.svg_parts ?? 0); i++) {
      const key = avatarSvgPartKey(projectId, avatarId, i);
      const part = await kv.get<Uint8Array>(key);
      if (part.value) op.set(key, part.value, { expireIn: keepMs });
    }
    if ((await op.commit()).ok) return true;
  }
}
