/**
 * Builds the `POST /v1/sessions` body of `sessions create` from its flags and an optional `--config`
 * JSON file. Values may be credentials: no error message here ever contains one (nor any flag value, nor
 * the file's content).
 *
 * @module
 */
import type { CreateSessionRequest } from "@avatar-svc/sdk";
import { UsageError } from "./usage_error.ts";

/** The provider-related flags of `sessions create` (all optional; raw strings as typed). */
export interface SessionFlags {
  /** `--provider`: `provider_type`. */
  provider?: string;
  /** `--engine-url`: `external_engine.url`. */
  engineUrl?: string;
  /** `--engine-header` (repeatable, `Name: value`): `external_engine.auth_headers`. */
  engineHeaders?: string[];
  /** `--sample-rate`: `external_engine.user_sample_rate`. */
  sampleRate?: string;
  /** `--client-secret`: `vendor1_realtime.client_secret`. */
  clientSecret?: string;
  /** `--access-token`: `vendor2.access_token`. */
  accessToken?: string;
  /** `--agent-id`: `vendor2.agent_id` or `vendor3.agent_id`. */
  agentId?: string;
  /** `--provider-api-key`: `vendor3.api_key`. */
  providerApiKey?: string;
  /** `--signed-url`: `vendor3.signed_url`. */
  signedUrl?: string;
  /** `--avatar`: `avatar_config.avatar_id`. */
  avatar?: string;
  /** `--bg`: `avatar_config.bg_id`. */
  bg?: string;
  /** `--transport`: `transport`. */
  transport?: string;
  /** `--webhook-url`: `webhook_url`. */
  webhookUrl?: string;
}

/** A JSON object. */
export type Json = Record<string, unknown>;

/** Which flags fill which field of which provider's config. */
const PROVIDER_FIELDS: Record<string, [keyof SessionFlags, string, string][]> = {
  external_engine: [["engineUrl", "--engine-url", "url"]],
  vendor1_realtime: [["clientSecret", "--client-secret", "client_secret"]],
  vendor2: [["accessToken", "--access-token", "access_token"], ["agentId", "--agent-id", "agent_id"]],
  vendor3: [
    ["agentId", "--agent-id", "agent_id"],
    ["providerApiKey", "--provider-api-key", "api_key"],
    ["signedUrl", "--signed-url", "signed_url"],
  ],
};

/** Flags that only make sense for one provider, with the providers that take them. */
const FLAG_PROVIDERS: [keyof SessionFlags, string, string[]][] = [
  ["engineUrl", "--engine-url", ["external_engine"]],
  ["engineHeaders", "--engine-header", ["external_engine"]],
  ["sampleRate", "--sample-rate", ["external_engine"]],
  ["clientSecret", "--client-secret", ["vendor1_realtime"]],
  ["accessToken", "--access-token", ["vendor2"]],
  ["agentId", "--agent-id", ["vendor2", "vendor3"]],
  ["providerApiKey", "--provider-api-key", ["vendor3"]],
  ["signedUrl", "--signed-url", ["vendor3"]],
];

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
export function parseHeaders(values: string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  values.forEach((raw, i) => {
    const colon = raw.indexOf(":");
    const name = colon > 0 ? raw.slice(0, colon).trim() : "";
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) {
      throw new UsageError(`--engine-header #${i + 1} must look like 'Name: value' (its value is not shown)`);
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

  for (const [key, flag, providers] of FLAG_PROVIDERS) {
    if (flags[key] !== undefined && !providers.includes(type)) {
      throw new UsageError(`${flag} applies to --provider ${providers.join(" or ")} only`);
    }
  }

  const providerConfig: Json = isObject(body.provider_config) ? { ...body.provider_config } : {};
  const config: Json = isObject(providerConfig[type]) ? { ...(providerConfig[type] as Json) } : {};
  for (const [key, , field] of PROVIDER_FIELDS[type] ?? []) {
    if (flags[key] !== undefined) config[field] = flags[key];
  }
  if (type === "external_engine") {
    const fromFlags = parseHeaders(flags.engineHeaders ?? []);
    const overridden = new Set(Object.keys(fromFlags).map((n) => n.toLowerCase()));
    const fromFile = Object.entries(isObject(config.auth_headers) ? config.auth_headers : {})
      .filter(([name]) => !overridden.has(name.toLowerCase()));
    config.auth_headers = { ...Object.fromEntries(fromFile), ...fromFlags };
    if (flags.sampleRate !== undefined) {
      if (!/^\d{1,6}$/.test(flags.sampleRate)) {
        throw new UsageError("--sample-rate must be a whole number of Hz");
      }
      config.user_sample_rate = Number(flags.sampleRate);
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
