/**
 * Opening the configured Deno KV (`SVC_KV`): a file path (its folder is created), `:memory:`, a KV Connect
 * URL (the token from `DENO_KV_ACCESS_TOKEN`, as Deno reads it), or — null — the database Deno Deploy attaches
 * to the app.
 *
 * @module
 */
import { ConfigError } from "../config.ts";

/** Opens the configured Deno KV; a location that cannot be opened is a {@link ConfigError} naming `SVC_KV`. */
export async function openKv(location: string | null): Promise<Deno.Kv> {
  try {
    if (location === null) return await Deno.openKv();
    if (location !== ":memory:" && !/^https?:\/\//.test(location)) {
      const dir = location.includes("/") ? location.slice(0, location.lastIndexOf("/")) : "";
      if (dir) await Deno.mkdir(dir, { recursive: true });
    }
    return await Deno.openKv(location);
  } catch (err) {
    const reason = err instanceof Error ? err.message.split("\n")[0].slice(0, 200) : String(err);
    // A KV Connect URL carries no secret (the token is in DENO_KV_ACCESS_TOKEN); never echo a query.
    throw new ConfigError(
      `invalid configuration: SVC_KV cannot be opened (${reason.replace(/\?\S*/g, "?…")})`,
    );
  }
}
