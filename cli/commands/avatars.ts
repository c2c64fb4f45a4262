/**
 * `avatars create|list|get|preview|delete`: the project avatars (docs/avatars.md) through the SDK's typed
 * methods. `--json` prints the API's answer as it is.
 *
 * @module
 */
import { API_OPTIONS, clientFromFlags } from "../api_client.ts";
import type { CommandSpec } from "../command.ts";
import { formatTime, printDetails, printJson, printTable } from "../output.ts";
import { startProgress } from "../progress.ts";
import { UsageError } from "../usage_error.ts";
import { VISEME_NAMES } from "../../src/vocabulary/viseme_names.ts";

const VISEMES = VISEME_NAMES;

type AvatarAnswer = {
  avatar_id: string;
  name: string;
  source: string;
  created_at: number;
  preview_url: string;
};

function details(avatar: AvatarAnswer): [string, string][] {
  return [
    ["avatar_id", avatar.avatar_id],
    ["name", avatar.name],
    ["source", avatar.source],
    ["created_at", formatTime(avatar.created_at)],
    ["preview_url", avatar.preview_url],
  ];
}

/** `avatars create`. */
export const avatarsCreate: CommandSpec = {
  path: ["avatars", "create"],
  summary: "Create a project avatar from a style or an SVG drawing (POST /v1/avatars)",
  description:
    "--style FILE.json: the style's parameters (docs/avatars.md; unknown ones answer 400). --svg FILE.svg: a\nlayered drawing following the rig; a refused drawing answers 400 SVC_INVALID_AVATAR naming what.\nNeeds scope avatars:write.",
  options: [
    { name: "name", type: "string", arg: "<name>", help: "the avatar's name (1..100 characters), required" },
    { name: "style", type: "string", arg: "<file.json>", help: "a JSON file of style parameters" },
    { name: "svg", type: "string", arg: "<file.svg>", help: "a layered SVG drawing" },
    ...API_OPTIONS,
  ],
  examples: [
    "deno task cli avatars create --name Mascot --style style.json",
    "deno task cli avatars create --name Presenter --svg presenter.svg --json",
  ],
  async run({ values }, io) {
    const name = values.name as string | undefined;
    if (!name) throw new UsageError("--name <name> is required");
    const stylePath = values.style as string | undefined, svgPath = values.svg as string | undefined;
    if ((stylePath === undefined) === (svgPath === undefined)) {
      throw new UsageError("give one of --style <file.json> or --svg <file.svg>");
    }
    let body;
    if (stylePath !== undefined) {
      let style: unknown;
      try {
        style = JSON.parse(await io.readTextFile(stylePath));
      } catch (e) {
        throw new UsageError(`--style ${stylePath}: not a JSON file (${e instanceof Error ? e.message : e})`);
      }
      body = { name, style: style as Record<string, never> };
    } else {
      body = { name, svg: await io.readTextFile(svgPath!) };
    }
    const client = clientFromFlags(values, io, startProgress(io, "", false).note);
    const avatar = await client.createAvatar(body);
    if (values.json) printJson(io, avatar);
    else printDetails(io, details(avatar));
    return 0;
  },
};

/** `avatars list`. */
export const avatarsList: CommandSpec = {
  path: ["avatars", "list"],
  summary: "List the project's avatars, newest first (GET /v1/avatars)",
  description: "One page; --cursor <next_cursor> for the next. Needs scope avatars:read.",
  options: [
    { name: "limit", type: "string", arg: "<n>", help: "page size, 1..100 (default 20)" },
    { name: "cursor", type: "string", arg: "<cursor>", help: "next_cursor of the previous page" },
    ...API_OPTIONS,
  ],
  examples: ["deno task cli avatars list", "deno task cli avatars list --limit 5 --json"],
  async run({ values }, io) {
    const limit = values.limit === undefined ? undefined : Number(values.limit);
    if (limit !== undefined && !(Number.isInteger(limit) && limit >= 1 && limit <= 100)) {
      throw new UsageError("--limit must be a whole number in 1..100");
    }
    const client = clientFromFlags(values, io, startProgress(io, "", false).note);
    const page = await client.listAvatars({
      ...(limit !== undefined ? { limit } : {}),
      ...(values.cursor ? { cursor: values.cursor as string } : {}),
    });
    if (values.json) printJson(io, page);
    else {
      printTable(
        io,
        ["avatar_id", "name", "source", "created_at"],
        page.data.map((a) => [a.avatar_id, a.name, a.source, formatTime(a.created_at)]),
      );
      if (page.next_cursor) io.stdout(`next: --cursor ${page.next_cursor}\n`);
    }
    return 0;
  },
};

/** `avatars get`. */
export const avatarsGet: CommandSpec = {
  path: ["avatars", "get"],
  summary: "Show a project avatar (GET /v1/avatars/{avatar_id})",
  description: "Another project's avatar answers 404 SVC_AVATAR_NOT_FOUND. Needs scope avatars:read.",
  positionals: [{ name: "avatar_id", help: "the avatar's id (av_…)" }],
  options: API_OPTIONS,
  examples: ["deno task cli avatars get av_3kTMd9xq0bq1h7nYQ2Lw6A"],
  async run({ values, positionals }, io) {
    const client = clientFromFlags(values, io, startProgress(io, "", false).note);
    const avatar = await client.getAvatar(positionals[0]);
    if (values.json) printJson(io, avatar);
    else printDetails(io, details(avatar));
    return 0;
  },
};

/** `avatars preview`. */
export const avatarsPreview: CommandSpec = {
  path: ["avatars", "preview"],
  summary: "Save a 512×512 PNG of a project avatar (GET /v1/avatars/{avatar_id}/preview.png)",
  description: "At rest, or saying --viseme (one of the 15). Needs scope avatars:read.",
  positionals: [{ name: "avatar_id", help: "the avatar's id (av_…)" }],
  options: [
    {
      name: "viseme",
      type: "string",
      arg: "<viseme>",
      help: `the mouth: ${VISEMES.join(", ")} (default sil)`,
    },
    {
      name: "output",
      short: "o",
      type: "string",
      arg: "<file.png>",
      help: "where to write the PNG, required",
    },
    ...API_OPTIONS,
  ],
  examples: ["deno task cli avatars preview av_3kTMd9xq0bq1h7nYQ2Lw6A --viseme aa -o aa.png"],
  async run({ values, positionals }, io) {
    const out = values.output as string | undefined;
    if (!out) throw new UsageError("-o <file.png> is required");
    const viseme = values.viseme as string | undefined;
    if (viseme !== undefined && !(VISEMES as readonly string[]).includes(viseme)) {
      throw new UsageError(`--viseme must be one of ${VISEMES.join(", ")}`);
    }
    const client = clientFromFlags(values, io, startProgress(io, "", false).note);
    const png = await client.previewAvatar(
      positionals[0],
      viseme ? { viseme: viseme as (typeof VISEMES)[number] } : {},
    );
    await (io.writeFile ?? ((p: string, b: Uint8Array) => Deno.writeFile(p, b)))(out, png);
    if (values.json) {
      printJson(io, { avatar_id: positionals[0], viseme: viseme ?? "sil", file: out, bytes: png.length });
    } else io.stdout(`wrote ${out} (${png.length} bytes)\n`);
    return 0;
  },
};

/** `avatars delete`. */
export const avatarsDelete: CommandSpec = {
  path: ["avatars", "delete"],
  summary: "Delete a project avatar (DELETE /v1/avatars/{avatar_id}); running sessions keep it",
  description: "New sessions naming it answer 400 afterwards. Needs scope avatars:write.",
  positionals: [{ name: "avatar_id", help: "the avatar's id (av_…)" }],
  options: API_OPTIONS,
  examples: ["deno task cli avatars delete av_3kTMd9xq0bq1h7nYQ2Lw6A"],
  async run({ values, positionals }, io) {
    const client = clientFromFlags(values, io, startProgress(io, "", false).note);
    await client.deleteAvatar(positionals[0]);
    if (values.json) printJson(io, { avatar_id: positionals[0], deleted: true });
    else io.stdout(`deleted ${positionals[0]}\n`);
    return 0;
  },
};
