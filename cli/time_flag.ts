/**
 * Times given on the command line (`--created-after`, `--created-before`): an ISO 8601 date or date-time,
 * Unix epoch milliseconds, or a duration ago (`90s`, `15m`, `2h`, `7d`).
 *
 * @module
 */
import { UsageError } from "./usage_error.ts";

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** The time `value` names, in Unix epoch milliseconds; a {@link UsageError} naming `flag` otherwise. */
export function parseTimeFlag(flag: string, value: string, now: number): number {
  const ago = /^(\d{1,9})([smhd])$/.exec(value);
  if (ago) return Math.max(0, now - Number(ago[1]) * UNIT_MS[ago[2]]);
  if (/^\d{1,16}$/.test(value)) return Number(value);
  if (/^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(value)) {
    const ms = Date.parse(value);
    if (Number.isFinite(ms) && ms >= 0) return ms;
  }
  throw new UsageError(
    `--${flag} must be an ISO 8601 time (2026-05-01T12:00:00Z), Unix epoch milliseconds, or a duration ago (90s, 15m, 2h, 7d)`,
  );
}

/** How long ago `ms` was, short: `42s`, `5m07s`, `3h05m`, `2d04h` (`-` for none). */
export function formatAge(ms: number | null | undefined, now: number): string {
  if (typeof ms !== "number") return "-";
  const s = Math.max(0, Math.floor((now - ms) / 1000));
  const pad = (n: number) => String(n).padStart(2, "0");
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${pad(s % 60)}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h${pad(Math.floor(s / 60) % 60)}m`;
  return `${Math.floor(s / 86_400)}d${pad(Math.floor(s / 3600) % 24)}h`;
}
