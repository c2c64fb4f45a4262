/**
 * Builds the `POST /v1/sessions` body of `sessions create` from its flags and an optional `--config`
 * JSON file. Values may be credentials: no error message here ever contains one (nor any flag value, nor
 * the file's content).
 *
 * @module
 */
import type { CreateSessionRequest } from "@avatar-svc/sdk";
import type { CliField } from "../src/providers/definitions/definition.ts";
import {
  isProviderType,
  PROVIDER_TYPES,
  PROVIDERS,
  type ProviderType,
} from "../src/providers/definitions/provider_types.ts";
import { UsageError } from "./usage_error.ts";

/** The provider-related flags of `sessions create` (all optional; raw strings as typed). */
export interface SessionFlags {
  /** `--provider`: `provider_type`. */
  provider?: string;
  /** `--avatar`: `avatar_config.avatar_id`. */
  avatar?: string;
  /** `--bg`: `avatar_config.bg_id`. */
  bg?: string;
  /** `--transport`: `transport`. */
  transport?: string;
  /** `--webhook-url`: `webhook_url`. */
  webhookUrl?: string;
  /**
   * The provider flags (each definition's `cli`, `src/providers/definitions/<type>.ts`) by {@link flagKey}:
   * `--client-secret` → `clientSecret`; a repeatable one (`--engine-header`) → `engineHeaders`, a list.
   */
  [providerFlag: string]: string | string[] | undefined;
}

/** A JSON object. */
export type Json = Record<string, unknown>;

/** The `SessionFlags` key of a provider flag: `--client-secret` → `clientSecret`; repeatable ones are plural. */
export function flagKey(field: CliField): string {
  const key = field.flag.replace(/-(\w)/g, (_, c: string) => c.toUpperCase());
  return field.value === "headers" ? `${key}s` : key;
}

/** Each provider flag (from the provider registry), with the providers that take it. */
export const PROVIDER_FLAGS: { field: CliField; providers: ProviderType[] }[] = (() => {
  const byFlag = new Map<string, { field: CliField; providers: ProviderType[] }>();
  for (const type of PROVIDER_TYPES) {
    for (const field of PROVIDERS[type].cli) {
      const entry = byFlag.get(field.flag) ?? { field, providers: [] };
      entry.providers.push(type);
      byFlag.set(field.flag, entry);
    }
  }
  return [...byFlag.values()];
})();

function isObject(v: unknown): v is Json {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** Parses the text of a `--config` file (never quoting it in errors). */
export function parseConfigText(text: string, source: string): Json {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // The parser's message quotes the input, which may hold credentials.
    throw new UsageError(`--config: ${source} is not valid JSON`);
  }
  if (!isObject(parsed)) {
    throw new UsageError(`--config: ${source} must hold a JSON object (a POST /v1/sessions body)`);
  }
  return parsed;
}

/** Parses `--engine-header 'Name: value'` values into a header dictionary (later ones win). */
export function parseHeaders(values: string[], flag = "--engine-header"): Record<string, string> {
  const headers: Record<string, string> = {};
  values.forEach((raw, i) => {
    const colon = raw.indexOf(":");
    const name = colon > 0 ? raw.slice(0, colon).trim() : "";
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) {
      throw new UsageError(`${flag} #${i + 1} must look like 'Name: value' (its value is not shown)`);
    }
    for (const existing of Object.keys(headers)) {
      if (existing.toLowerCase() === name.toLowerCase()) delete headers[existing];
    }
    headers[name] = raw.slice(colon + 1).trim();
  });
  return headers;
}

/**
 * The request body: the `--config` object (if any) with the flags applied on top. Provider flags go into
 * `provider_config[provider_type]`; `--engine-header`s are added to the file's `auth_headers`.
 */
export function buildSessionRequest(flags: SessionFlags, file?: Json): CreateSessionRequest {
  const body: Json = { ...file };
  const fileType = typeof body.provider_type === "string" ? body.provider_type : undefined;
  if (flags.provider && fileType && flags.provider !== fileType) {
    throw new UsageError("--provider differs from provider_type in the --config file");
  }
  const type = flags.provider ?? fileType;
  if (!type) throw new UsageError("--provider <type> is required (or provider_type in --config)");
  body.provider_type = type;

  for (const { field, providers } of PROVIDER_FLAGS) {
    if (flags[flagKey(field)] !== undefined && !(providers as string[]).includes(type)) {
      throw new UsageError(`--${field.flag} applies to --provider ${providers.join(" or ")} only`);
    }
  }

  const providerConfig: Json = isObject(body.provider_config) ? { ...body.provider_config } : {};
  const config: Json = isObject(providerConfig[type]) ? { ...(providerConfig[type] as Json) } : {};
  const fields = isProviderType(type) ? PROVIDERS[type].cli : [];
  for (const field of fields) {
    const given = flags[flagKey(field)];
    if (field.value === "headers") {
      // Always present (the service requires the field); the flags' headers replace the file's of the same name.
      const fromFlags = parseHeaders((given as string[] | undefined) ?? [], `--${field.flag}`);
      const overridden = new Set(Object.keys(fromFlags).map((n) => n.toLowerCase()));
      const fromFile = Object.entries(isObject(config[field.field]) ? config[field.field] as Json : {})
        .filter(([name]) => !overridden.has(name.toLowerCase()));
      config[field.field] = { ...Object.fromEntries(fromFile), ...fromFlags };
    } else if (given !== undefined && field.value === "hz") {
      if (typeof given !== "string" || !/^\d{1,6}$/.test(given)) {
        throw new UsageError(`--${field.flag} must be a whole number of Hz`);
      }
      config[field.field] = Number(given);
    } else if (given !== undefined) {
      config[field.field] = given;
    }
  }
  providerConfig[type] = config;
  body.provider_config = providerConfig;

  if (flags.avatar !== undefined || flags.bg !== undefined) {
    const avatar: Json = isObject(body.avatar_config) ? { ...body.avatar_config } : {};
    if (flags.avatar !== undefined) avatar.avatar_id = flags.avatar;
    if (flags.bg !== undefined) avatar.bg_id = flags.bg;
    body.avatar_config = avatar;
  }
  if (flags.transport !== undefined) body.transport = flags.transport;
  if (flags.webhookUrl !== undefined) body.webhook_url = flags.webhookUrl;
  // The service validates every field (and answers with messages that never contain their values).
  return body as unknown as CreateSessionRequest;
}
