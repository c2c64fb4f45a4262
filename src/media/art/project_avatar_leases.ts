/**
 * Which project avatars this process's sessions hold, and their one preparation each. A project avatar is
 * read from KV and rasterised for the renderer when its first session here starts, and let go (its layers,
 * its sprites) when its last session here ends — after `lingerMs`, so that the next session of the same
 * avatar starts as fast as a stock avatar's instead of reading and rasterising it again (avatars never change
 * once made; the API checks ownership and deletion before a session is started with one). Sessions start and
 * end concurrently, so the count is taken before anything is awaited: a session whose avatar is still being
 * prepared holds it, and the one that ends meanwhile cannot let it go under it (which made the renderer miss
 * its art); two sessions that start together share one read and one rasterising. A preparation that fails
 * is forgotten, so the next session tries again.
 *
 * @module
 */
import type { AvatarLayers } from "./layers.ts";

/** What the leases work with: the avatar's reader and the renderer's preparing and forgetting. */
export interface ProjectAvatarLeaseDeps {
  /** Reads a project avatar's layers (null: none). */
  load(projectId: string, avatarId: string): Promise<AvatarLayers | null>;
  /** Rasterises it for the renderer. */
  prepare(avatarId: string, layers: AvatarLayers): Promise<void>;
  /** Drops what the renderer keeps of it. */
  forget(avatarId: string): void;
  /** How long an avatar no session holds stays prepared (ms; default 0: let go at once). */
  lingerMs?: number;
}

interface Lease {
  users: number;
  ready: Promise<AvatarLayers | null>;
  layers: AvatarLayers | null;
  /** Its letting go, when no session holds it and it lingers. */
  linger?: ReturnType<typeof setTimeout>;
}

/** The project avatars held by this process's sessions (see the module documentation). */
export class ProjectAvatarLeases {
  readonly #leases = new Map<string, Lease>();

  constructor(readonly deps: ProjectAvatarLeaseDeps) {}

  /**
   * Holds `avatarId` for one session and resolves once it is prepared: true, or false when there is no such
   * avatar (nothing is then held). Rejects when reading or rasterising failed (nothing is then held).
   */
  async acquire(projectId: string, avatarId: string): Promise<boolean> {
    let lease = this.#leases.get(avatarId);
    if (!lease) {
      const fresh: Lease = { users: 0, ready: this.#prepare(projectId, avatarId), layers: null };
      this.#leases.set(avatarId, lease = fresh);
      fresh.ready.then((layers) => fresh.layers = layers, () => {});
    }
    clearTimeout(lease.linger);
    lease.linger = undefined;
    lease.users++;
    let layers: AvatarLayers | null;
    try {
      layers = await lease.ready;
    } catch (err) {
      this.#drop(avatarId, lease);
      throw err;
    }
    if (!layers) this.#drop(avatarId, lease);
    return layers !== null;
  }

  /** Lets one session's hold go; the last one lets the avatar go. */
  release(avatarId: string): void {
    const lease = this.#leases.get(avatarId);
    if (lease) this.#drop(avatarId, lease);
  }

  /** The layers of a held, prepared avatar (null otherwise). */
  layersOf(avatarId: string): AvatarLayers | null {
    return this.#leases.get(avatarId)?.layers ?? null;
  }

  /** Sessions holding `avatarId` (0 when none). */
  users(avatarId: string): number {
    return this.#leases.get(avatarId)?.users ?? 0;
  }

  async #prepare(projectId: string, avatarId: string): Promise<AvatarLayers | null> {
    const layers = await this.deps.load(projectId, avatarId);
    if (layers) await this.deps.prepare(avatarId, layers);
    return layers;
  }

  #drop(avatarId: string, lease: Lease): void {
    if (--lease.users > 0 || this.#leases.get(avatarId) !== lease) return;
    const lingerMs = this.deps.lingerMs ?? 0;
    // (a failed or missing avatar has no layers: forgotten at once, so the next session tries again)
    if (lingerMs <= 0 || !lease.layers) return this.#forget(avatarId, lease);
    clearTimeout(lease.linger);
    lease.linger = setTimeout(() => this.#forget(avatarId, lease), lingerMs);
  }

  #forget(avatarId: string, lease: Lease): void {
    clearTimeout(lease.linger);
    if (this.#leases.get(avatarId) !== lease) return;
    this.#leases.delete(avatarId);
    this.deps.forget(avatarId);
  }

  /** Lets every avatar that no session holds go now, and stops the linger timers (the plane closes). */
  close(): void {
    for (const [avatarId, lease] of [...this.#leases]) if (lease.users <= 0) this.#forget(avatarId, lease);
  }
}
