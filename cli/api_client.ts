/**
 * How the API commands reach the service: the shared flags (`--api-url`, `--api-key`, `--retries`,
 * `--json`), the environment (`SVC_API_URL`, `SVC_API_KEY`) and the SDK client built from them.
 *
 * @module
 */
import { type Client, createClient, type RetryEvent } from "@avatar-svc/sdk";
import type { OptionSpec, Values } from "./command.ts";
import type { Io } from "./io.ts";
import { UsageError } from "./usage_error.ts";

/** Where the service is when neither `--api-url` nor `SVC_API_URL` says (the `deno task start` default). */
export const DEFAULT_API_URL = "http://127.0.0.1:8787";

/** Most retries `--retries` accepts. */
const MAX_RETRIES = 10;

/** The flags every API command takes. */
export const API_OPTIONS: readonly OptionSpec[] = [
  {
    name: "api-url",
    type: "string",
    arg: "<url>",
    help: `service URL (default: $SVC_API_URL, else ${DEFAULT_API_URL})`,
  },
  {
    name: "api-key",
    type: "string",
    arg: "<key>",
    help: "API key (default: $SVC_API_KEY; prefer the variable: flags show in the process list)",
  },
  {
    name: "retries",
    type: "string",
    arg: "<n>",
    help:
      `retry retryable failures up to n times, waiting retry_after with jitter (0..${MAX_RETRIES}, default 0)`,
  },
  { name: "json", type: "boolean", help: "print the API's answer as JSON, exactly" },
];

/** Parses `--retries`. */
function parseRetries(value: Values[string]): number {
  if (value === undefined) return 0;
  if (typeof value !== "string" || !/^\d+$/.test(value) || Number(value) > MAX_RETRIES) {
    throw new UsageError(`--retries must be a whole number in 0..${MAX_RETRIES}`);
  }
  return Number(value);
}

/** Describes a retry wait for the user. */
export function retryNotice(event: RetryEvent, maxAttempts: number): string {
  return `Retrying in ${(event.delayMs / 1000).toFixed(1)} s after ${event.error.code} (attempt ${
    event.attempt + 1
  } of ${maxAttempts})`;
}

/**
 * Builds the SDK client from the flags and the environment. A missing key, a malformed URL or a bad
 * `--retries` is a {@link UsageError}. `onRetry` is told about every retry wait.
 */
export function clientFromFlags(
  values: Values,
  io: Io,
  onRetry: (notice: string) => void,
): Client {
  const apiUrl = (values["api-url"] as string | undefined) ?? io.env("SVC_API_URL") ?? DEFAULT_API_URL;
  const apiKey = (values["api-key"] as string | undefined) ?? io.env("SVC_API_KEY");
  if (!apiKey) throw new UsageError("no API key: set SVC_API_KEY or pass --api-key <key>");
  const retries = parseRetries(values.retries);
  const maxAttempts = retries + 1;
  try {
    return createClient({
      baseUrl: apiUrl,
      apiKey,
      fetch: io.fetch,
      retry: retries > 0 && { maxAttempts, onRetry: (event) => onRetry(retryNotice(event, maxAttempts)) },
    });
  } catch (err) {
    // The SDK's option errors never contain the key.
    if (err instanceof TypeError) {
      throw new UsageError(`${err.message.replace(/^baseUrl/, "--api-url / SVC_API_URL")}`);
    }
    throw err;
  }
}
