/**
 * Listing cursors (`next_cursor` of `GET /v1/sessions`): opaque to clients, tamper-evident, and bound to
 * the project and the filters they were issued for.
 *
 * A cursor is `v1.<position>.<mac>` in base64url: the position is the last item of the page (`created_at`
 * and `session_id`, which the caller has just been shown), and the MAC is HMAC-SHA256 with the deployment's
 * cursor key (`src/kv/list_cursor_key.ts`) over the version, the project id, the canonical filters and the
 * position. A cursor that was altered, comes from another project, or is replayed with other filters fails
 * the check and answers 400; the page size may change from page to page.
 *
 * @module
 */
import type { ListPosition } from "../kv/session_index.ts";
import { SESSION_ID_PATTERN } from "../ids.ts";

/** The filters a cursor is bound to. */
export interface CursorFilters {
  statuses: readonly string[] | null;
  providerType: string | null;
  transport: string | null;
  createdAfter: number | null;
  createdBefore: number | null;
}

const encoder = new TextEncoder();

function b64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

function fromB64url(s: string): Uint8Array<ArrayBuffer> | null {
  if (!/^[A-Za-z0-9_-]*$/.test(s)) return null;
  try {
    return Uint8Array.from(atob(s.replaceAll("-", "+").replaceAll("_", "/")), (c) => c.charCodeAt(0));
  } catch {
    return null;
  }
}

/** The filters in one canonical form (statuses sorted and deduplicated). */
function canonical(f: CursorFilters): string {
  return JSON.stringify([
    f.statuses === null ? null : [...new Set(f.statuses)].sort(),
    f.providerType,
    f.transport,
    f.createdAfter,
    f.createdBefore,
  ]);
}

/** Which listing a cursor pages: its name (signed, so one listing's cursor is refused by another) and ids. */
export interface Listing {
  /** Empty for the session listing (its cursors predate the others'). */
  name: string;
  idPattern: RegExp;
}

/** The session listing. */
export const SESSION_LISTING: Listing = { name: "", idPattern: SESSION_ID_PATTERN };

function signedBytes(
  projectId: string,
  filters: CursorFilters,
  position: string,
  listing: Listing,
): Uint8Array<ArrayBuffer> {
  const name = listing.name ? `/${listing.name}` : "";
  return encoder.encode(`list-cursor/v1${name}\n${projectId}\n${canonical(filters)}\n${position}`);
}

/** Issues the cursor of the page that ends at `position`. */
export async function encodeCursor(
  key: CryptoKey,
  projectId: string,
  filters: CursorFilters,
  position: ListPosition,
  listing: Listing = SESSION_LISTING,
): Promise<string> {
  const pos = b64url(encoder.encode(JSON.stringify([position.createdAt, position.sessionId])));
  const mac = new Uint8Array(
    await crypto.subtle.sign("HMAC", key, signedBytes(projectId, filters, pos, listing)),
  );
  return `v1.${pos}.${b64url(mac)}`;
}

/** The position of a cursor issued for this project and these filters, or null when it is not one. */
export async function decodeCursor(
  key: CryptoKey,
  projectId: string,
  filters: CursorFilters,
  cursor: string,
  listing: Listing = SESSION_LISTING,
): Promise<ListPosition | null> {
  const parts = cursor.split(".");
  if (parts.length !== 3 || parts[0] !== "v1") return null;
  const mac = fromB64url(parts[2]);
  if (!mac || mac.length !== 32) return null;
  if (!(await crypto.subtle.verify("HMAC", key, mac, signedBytes(projectId, filters, parts[1], listing)))) {
    return null;
  }
  const raw = fromB64url(parts[1]);
  if (!raw) return null;
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(raw));
  } catch {
    return null;
  }
  if (
    !Array.isArray(value) || value.length !== 2 || !Number.isSafeInteger(value[0]) || value[0] < 0 ||
    typeof value[1] !== "string" || !listing.idPattern.test(value[1])
  ) return null;
  return { createdAt: value[0], sessionId: value[1] };
}
