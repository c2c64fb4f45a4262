/**
 * API key scopes. `api_keys:read` exists for the non-canonical key listing route.
 *
 * @module
 */

/** Every scope, in documentation order. */
export const SCOPES = [
  "sessions:read",
  "sessions:write",
  "api_keys:read",
  "api_keys:write",
  "avatars:read",
  "avatars:write",
] as const;

/** One scope name. */
export type Scope = (typeof SCOPES)[number];

/** True when `s` is a known scope. */
export function isScope(s: string): s is Scope {
  return (SCOPES as readonly string[]).includes(s);
}
