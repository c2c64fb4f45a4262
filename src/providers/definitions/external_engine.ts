/**
 * `provider_config.external_engine`: the URL of a customer engine speaking protocol V0 and the headers of
 * its upgrade request. Messages never include the values (they may be credentials).
 *
 * @module
 */
import { z } from "@hono/zod-openapi";
import { urlField } from "../../text_fields.ts";
import { defineProvider } from "./definition.ts";

/** Headers that cannot be set on the engine upgrade request. */
const RESERVED_HEADERS = /^(host|connection|upgrade|content-length|transfer-encoding|sec-websocket-.*)$/i;
/** RFC 9110 token characters. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Printable header values (no CR/LF). */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\uffff]*$/;

/** `provider_config.external_engine`. */
export const ExternalEngineConfig = z.strictObject({
  url: urlField("wss", 2048).openapi({
    description: "wss:// URL of an engine implementing the V0 external conversation engine protocol.",
    format: "uri",
  }),
  auth_headers: z.record(z.string(), z.string()).superRefine((headers, ctx) => {
    const names = Object.keys(headers);
    if (names.length > 32) ctx.addIssue({ code: "custom", message: "at most 32 headers" });
    for (const name of names) {
      // The name is never echoed: a misplaced secret could be in it.
      if (!HEADER_NAME.test(name) || name.length > 256) {
        ctx.addIssue({ code: "custom", message: "contains an invalid header name" });
      } else if (RESERVED_HEADERS.test(name)) {
        ctx.addIssue({
          code: "custom",
          message: "contains a reserved header (Host, Connection, Upgrade, Sec-WebSocket-*, …)",
        });
      }
      const value = headers[name];
      if (!HEADER_VALUE.test(value) || value.length > 8192) {
        ctx.addIssue({ code: "custom", message: "contains an invalid header value" });
      }
    }
  }).openapi({
    description: "Header dictionary sent on the engine's WebSocket upgrade request (credentials go here).",
  }),
  user_sample_rate: z.number().int().min(8000).max(48000).optional().openapi({
    description: "Hz of the PCM16LE user audio sent to the engine.",
    default: 24000,
  }),
}).openapi("ExternalEngineConfig");

/** The provider definition of `external_engine` (the demo page offers its own reference engine instead). */
export const EXTERNAL_ENGINE = defineProvider({
  schema: ExternalEngineConfig,
  credentials: { url: { url: "wss" }, auth_headers: "headers" },
  // The customer's engine is wherever its `url` says: no setting.
  settings: {},
  cli: [
    { flag: "engine-url", field: "url", arg: "<wss://…>", help: "the engine's wss:// URL", secret: false },
    {
      flag: "engine-header",
      field: "auth_headers",
      arg: "<'Name: value'>",
      help: "a header of the engine's upgrade request",
      secret: true,
      value: "headers",
    },
    {
      flag: "sample-rate",
      field: "user_sample_rate",
      arg: "<hz>",
      help: "user audio rate, 8000..48000",
      secret: false,
      value: "hz",
    },
  ],
});
