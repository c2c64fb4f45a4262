/**
 * Project avatars (docs/avatars.md): create from a style or an uploaded drawing, list, get, delete, preview,
 * and the check a session create makes of `avatar_config.avatar_id`. Storage is `kv/avatars.ts`; the drawing
 * is made safe by `avatar_svg/` (pure); rasterising (previews and an upload's cost check) is media code,
 * loaded with a dynamic `import()` on first use only, so the API's static module graph stays free of it.
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import { ApiError } from "../errors.ts";
import { newAvatarId } from "../ids.ts";
import {
  type AvatarRecord,
  createAvatar,
  deleteAvatar,
  getAvatar,
  listAvatars,
  readAvatarSvg,
} from "../kv/avatars.ts";
import { kvOp } from "../kv/guard.ts";
import { cursorKeyOf } from "../kv/handle_state.ts";
import { acceptSvg } from "../avatar_svg/accept.ts";
import { SvgRefusal } from "../avatar_svg/refusal.ts";
import { type CursorFilters, decodeCursor, encodeCursor, type Listing } from "../sessions/list_cursor.ts";
import { AVATAR_ID_PATTERN } from "../ids.ts";
import type { AvatarStyleParams } from "../vocabulary/avatar_style.ts";

/** Avatars a project may hold at once (docs/avatars.md#limits). */
export const AVATAR_QUOTA = 100;
/** Largest page of the listing. */
export const MAX_AVATAR_PAGE = 100;
/** Default page of the listing. */
export const DEFAULT_AVATAR_PAGE = 20;

const LISTING: Listing = { name: "avatars", idPattern: AVATAR_ID_PATTERN };
const NO_FILTERS: CursorFilters = {
  statuses: null,
  providerType: null,
  transport: null,
  createdAfter: null,
  createdBefore: null,
};

/** An avatar as the API shows it. */
export interface AvatarView {
  avatar_id: string;
  name: string;
  source: "style" | "svg";
  created_at: number;
  preview_url: string;
  style?: AvatarStyleParams;
}

/** What a project avatar is drawn from (what a worker or a preview rasterises). */
export type AvatarSource = { style: AvatarStyleParams } | { svg: string };

/** The rasterising the API side needs (implemented by `media/art/avatar_raster.ts`). */
export interface AvatarRaster {
  previewPng(source: AvatarSource, viseme: string): Promise<Uint8Array>;
  checkDrawingCost(svg: string): Promise<unknown>;
}

/** The media module behind {@link AvatarRaster}, loaded on first use. */
export function loadAvatarRaster(): Promise<AvatarRaster> {
  return import("../media/art/avatar_raster.ts") as unknown as Promise<AvatarRaster>;
}

/** What the service needs. */
export interface AvatarServiceDeps {
  kv: Deno.Kv;
  clock: Clock;
  /** How long a deleted avatar's drawing stays readable for the sessions running it (ms). */
  keepDeletedMs: number;
  quota?: number;
  raster?: () => Promise<AvatarRaster>;
}

function refused(e: unknown): never {
  if (e instanceof SvgRefusal) throw new ApiError("SVC_INVALID_AVATAR", `svg: ${e.message}`);
  throw e;
}

/** The project avatars of every project (each call names its project). */
export class AvatarService {
  #raster: Promise<AvatarRaster> | null = null;
  constructor(readonly deps: AvatarServiceDeps) {}

  #rasterModule(): Promise<AvatarRaster> {
    this.#raster ??= (this.deps.raster ?? loadAvatarRaster)();
    return this.#raster;
  }

  /** The API's view of a record. */
  view(rec: AvatarRecord): AvatarView {
    return {
      avatar_id: rec.avatar_id,
      name: rec.name,
      source: rec.source,
      created_at: rec.created_at,
      preview_url: `/v1/avatars/${rec.avatar_id}/preview.png`,
      ...(rec.style ? { style: rec.style } : {}),
    };
  }

  async #store(projectId: string, rec: AvatarRecord, svg: string | null): Promise<AvatarView> {
    const quota = this.deps.quota ?? AVATAR_QUOTA;
    const out = await kvOp(() => createAvatar(this.deps.kv, projectId, rec, svg, quota));
    if (!out.ok) {
      throw new ApiError(
        "SVC_INVALID_AVATAR",
        `the project holds its quota of ${quota} avatars: delete one first`,
      );
    }
    return this.view(rec);
  }

  /** Creates an avatar from a style (already parsed, defaults filled in). */
  createFromStyle(projectId: string, name: string, style: AvatarStyleParams): Promise<AvatarView> {
    const rec: AvatarRecord = {
      avatar_id: newAvatarId(),
      name,
      source: "style",
      created_at: this.deps.clock.now(),
      style,
    };
    return this.#store(projectId, rec, null);
  }

  /** Creates an avatar from an uploaded drawing: sanitised, rig checked, cost measured; refused → 400. */
  async createFromSvg(projectId: string, name: string, svg: string): Promise<AvatarView> {
    let clean: string;
    try {
      clean = acceptSvg(svg).svg;
    } catch (e) {
      refused(e);
    }
    try {
      await (await this.#rasterModule()).checkDrawingCost(clean);
    } catch (e) {
      refused(e);
    }
    const rec: AvatarRecord = {
      avatar_id: newAvatarId(),
      name,
      source: "svg",
      created_at: this.deps.clock.now(),
    };
    return this.#store(projectId, rec, clean);
  }

  /** A live avatar of the project, or 404 (another project's id too). */
  async get(projectId: string, avatarId: string): Promise<AvatarRecord> {
    const rec = AVATAR_ID_PATTERN.test(avatarId)
      ? await kvOp(() => getAvatar(this.deps.kv, projectId, avatarId))
      : null;
    if (!rec || rec.deleted_at) throw new ApiError("SVC_AVATAR_NOT_FOUND");
    return rec;
  }

  /** One page of the project's avatars, newest first. */
  async list(projectId: string, q: { limit?: number; cursor?: string }) {
    const limit = q.limit ?? DEFAULT_AVATAR_PAGE;
    const key = await cursorKeyOf(this.deps.kv, this.deps.clock.now());
    const after = q.cursor === undefined
      ? null
      : await decodeCursor(key, projectId, NO_FILTERS, q.cursor, LISTING);
    if (q.cursor !== undefined && !after) {
      throw new ApiError("SVC_INVALID_REQUEST", "query.cursor: not a cursor of this listing");
    }
    const page = await kvOp(() => listAvatars(this.deps.kv, projectId, { limit, after }));
    return {
      data: page.items.map((r) => this.view(r)),
      next_cursor: page.next ? await encodeCursor(key, projectId, NO_FILTERS, page.next, LISTING) : null,
    };
  }

  /** Deletes an avatar (404 when there is none); running sessions keep theirs. */
  async delete(projectId: string, avatarId: string): Promise<void> {
    await this.get(projectId, avatarId);
    const ok = await kvOp(() =>
      deleteAvatar(this.deps.kv, projectId, avatarId, this.deps.clock.now(), this.deps.keepDeletedMs)
    );
    if (!ok) throw new ApiError("SVC_AVATAR_NOT_FOUND");
  }

  /** What an avatar is drawn from; `includeDeleted` for a session that already runs it. */
  async source(projectId: string, avatarId: string, includeDeleted = false): Promise<AvatarSource | null> {
    if (!AVATAR_ID_PATTERN.test(avatarId)) return null;
    const rec = await kvOp(() => getAvatar(this.deps.kv, projectId, avatarId));
    if (!rec || (rec.deleted_at && !includeDeleted)) return null;
    if (rec.source === "style" && rec.style) return { style: rec.style };
    const svg = await kvOp(() => readAvatarSvg(this.deps.kv, projectId, rec));
    return svg === null ? null : { svg };
  }

  /** A 512×512 PNG of the avatar at rest saying `viseme`. */
  async preview(projectId: string, avatarId: string, viseme: string): Promise<Uint8Array> {
    await this.get(projectId, avatarId);
    const source = await this.source(projectId, avatarId);
    if (!source) throw new ApiError("SVC_AVATAR_NOT_FOUND");
    return await (await this.#rasterModule()).previewPng(source, viseme);
  }
}
