/**
 * Settings read from the environment: what one is (its variable, the zod schema of its text, its default)
 * and the schemas of the values settings share (whole numbers, booleans, URLs, host lists).
 *
 * `config.ts`, the one module that reads the environment, parses the service's own settings and those each
 * provider definitions entry declares (`src/providers/definitions/<type>.ts`, `settings`) with these, so a
 * provider's endpoints are declared beside its schema and no per-provider line is written in `config.ts`.
 *
 * @module
 */
import { z } from "zod";

/** One setting: an environment variable, the schema of its text, and its default. */
export interface Setting<S extends z.ZodType = z.ZodType> {
  /** The environment variable (`SVC_…`). */
  env: string;
  /** Parses the variable's text (an empty variable counts as unset). */
  schema: S;
  /** The default, as the text a user would write. */
  default: string;
}

/** Named settings (a provider's endpoints). */
export type Settings = Record<string, Setting>;

/** The parsed values of {@link Settings}. */
export type SettingValues<T extends Settings> = { [K in keyof T]: z.output<T[K]["schema"]> };

/**
 * A setting (typed by its schema).
 *
 * @example A provider's endpoint
 * ```ts
 * import { setting, wssUrl } from "./settings.ts";
 * const url = setting({ env: "SVC_VENDOR9_URL", schema: wssUrl, default: "wss://api.example.com/v1" });
 * ```
 */
export function setting<S extends z.ZodType>(s: Setting<S>): Setting<S> {
  return s;
}

/** `true`/`false`, `1`/`0`, `on`/`off`, `yes`/`no`. */
export const bool = z.enum(["true", "false", "1", "0", "on", "off", "yes", "no"]).transform((v) =>
  ["true", "1", "on", "yes"].includes(v)
);

/** A whole number in `min..max`. */
export const int = (min: number, max: number) =>
  z.string().regex(/^\d+$/, "must be a whole number").transform(Number).pipe(
    z.number().int().min(min).max(max),
  );

/** Loopback hosts, where plain ws:// and http:// are accepted (tests and local fakes). */
const LOOPBACK = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/;
const urlOf = (u: string): URL | null => URL.canParse(u) ? new URL(u) : null;
const secureUrl = (secure: "wss" | "https") =>
  z.url({ protocol: secure === "wss" ? /^wss?$/ : /^https?$/, error: `must be a ${secure}:// URL` })
    .refine((u) => {
      const url = urlOf(u);
      return !url || url.protocol === `${secure}:` || LOOPBACK.test(url.hostname);
    }, `must be a ${secure}:// URL (plain ${secure.slice(0, -1)}:// on loopback only)`)
    .refine((u) => !urlOf(u)?.hash, "must not have a fragment")
    .transform((u) => u.replace(/\/+$/, ""));

/** A wss:// URL (ws:// on loopback), no fragment, trailing slashes dropped. */
export const wssUrl = secureUrl("wss");
/** An https:// URL (http:// on loopback), no query or fragment, trailing slashes dropped. */
export const httpsUrl = secureUrl("https").refine((u) => !urlOf(u)?.search, "must have no query");
/** A comma-separated list of host names, lower-cased, at least one. */
export const hostList = z.string().transform((v) =>
  v.split(",").map((h) => h.trim().toLowerCase()).filter(Boolean)
)
  .pipe(
    z.array(
      z.string().regex(/^[a-z0-9.-]+$|^\[[0-9a-f:.]+\]$/, "must be a comma-separated list of host names"),
    )
      .min(1, "must name at least one host"),
  );
