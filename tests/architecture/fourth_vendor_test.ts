/**
 * A fourth vendor takes three code files (docs/architecture.md, "Changing the code"): its provider definition
 * (`src/providers/definitions/<type>.ts`, new), one line of the definitions' list (`provider_types.ts`) and its bridge
 * (`src/providers/<type>/bridge.ts`, new). Proved on a throw-away copy of the tree: a fifth provider type,
 * `vendor4`, is added touching exactly those three files, and then the configuration reads its setting, the
 * contract (the `ProviderType` enum, `provider_config`, the OpenAPI document) names it, the credential
 * reader keeps its secret as bytes, the CLI builds its request, the demo offers it, and the worker side
 * builds its bridge with its setting — while the API app still loads no bridge.
 *
 * And the per-vendor lists stay gone: outside its own files and the definitions' list, no code of `src/` or
 * `cli/` names a provider type.
 *
 * @module
 */
import assert from "node:assert/strict";
import { PROVIDER_TYPES } from "../../src/providers/definitions/provider_types.ts";

const ROOT = new URL("../../", import.meta.url);
const ROOT_PATH = decodeURIComponent(ROOT.pathname);

/** The folders and files of the tree the probe needs. */
const COPIED = ["src", "engine", "cli", "sdk", "deno.json", "deno.lock"];

/** The fixture: the new vendor's provider definition. */
const ENTRY = `/**
 * \`provider_config.vendor4\`: a throw-away provider type (tests/architecture/fourth_vendor_test.ts).
 *
 * @module
 */
import { z } from "@hono/zod-openapi";
import { wssUrl } from "../../settings.ts";
import { defineProvider } from "./definition.ts";

/** \`provider_config.vendor4\`. */
export const Vendor4Config = z.strictObject({
  token: z.string().min(1).max(4096),
}).openapi("Vendor4Config");

/** The provider definition of \`vendor4\`. */
export const VENDOR4 = defineProvider({
  schema: Vendor4Config,
  credentials: { token: "secret" },
  settings: {
    url: { env: "SVC_VENDOR4_URL", schema: wssUrl, default: "wss://api.vendor4.example/v1/agents" },
  },
  cli: [{ flag: "vendor4-token", field: "token", arg: "<token>", help: "a token", secret: true }],
  demo: { label: "token", fields: [{ field: "token", label: "Token", input: "password" }] },
});
`;

/** The fixture: the new vendor's bridge (it refuses every session, naming where it would connect). */
const BRIDGE = `/**
 * A throw-away bridge (tests/architecture/fourth_vendor_test.ts).
 *
 * @module
 */
import type { BridgeFactory } from "../types.ts";

/** The bridge of \`vendor4\`. */
export const createBridge: BridgeFactory<"vendor4"> = (deps) => ({
  connect: () => Promise.reject(new Error(\`vendor4 would connect to \${deps.settings.url}\`)),
});
`;

/** What the copy runs: every surface that should now know \`vendor4\`. */
const PROBE = `
import { CONFIG_VARIABLES, ConfigError, loadConfig } from "./src/config.ts";
import { demoOffers, PROVIDER_TYPES } from "./src/providers/definitions/provider_types.ts";
import { checkProviderConfigShape, ProviderConfig } from "./src/providers/definitions/config_schema.ts";
import { readCredentials } from "./src/providers/definitions/credential_reader.ts";
import { ProviderType } from "./src/vocabulary/schemas.ts";
import { createBridges } from "./src/providers/bridges.ts";
import { emitOpenApi } from "./src/api/emit_openapi.ts";
import { silentLogger } from "./src/log.ts";
import { buildSessionRequest } from "./cli/session_request.ts";

const out: Record<string, unknown> = {};
out.types = PROVIDER_TYPES;
out.enum = ProviderType.options;
out.defaultUrl = loadConfig({}).providers.vendor4.url;
const config = loadConfig({ SVC_VENDOR4_URL: "wss://v4.test/agents/" });
out.url = config.providers.vendor4.url;
try {
  loadConfig({ SVC_VENDOR4_URL: "http://v4.test/" });
} catch (err) {
  out.refused = err instanceof ConfigError ? err.message : String(err);
}
out.variable = CONFIG_VARIABLES.includes("SVC_VENDOR4_URL");
out.schema = ProviderConfig.safeParse({ vendor4: { token: "t" } }).success;
out.shape = checkProviderConfigShape("vendor4", { vendor4: { token: "t" } });
const read = readCredentials(new TextEncoder().encode(
  JSON.stringify({ provider_type: "vendor4", provider_config: { vendor4: { token: "s3cr3t-t0ken" } } }),
));
out.credential = read.found ? new TextDecoder().decode(read.found.secrets.get("token")) : null;
out.blanked = new TextDecoder().decode(read.blanked).includes("s3cr3t-t0ken");
read.zero();
out.cli = buildSessionRequest({ provider: "vendor4", vendor4Token: "abc" }).provider_config;
out.demo = demoOffers().map((o) => o.type);
const bridges = await createBridges({ config, logger: silentLogger });
out.bridges = Object.keys(bridges);
out.connect = await bridges.vendor4.connect({} as never).catch((e: Error) => e.message);
const doc = JSON.parse(await emitOpenApi());
out.openapi = {
  config: doc.components.schemas.Vendor4Config !== undefined,
  providerConfig: Object.keys(doc.components.schemas.ProviderConfig.properties),
  enum: doc.components.schemas.ProviderType.enum,
};
console.log(JSON.stringify(out));
`;

/** Runs deno in `cwd`; its stdout, or throws with its stderr. */
async function deno(cwd: string, args: string[]): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), { args, cwd, stdout: "piped", stderr: "piped" })
    .output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  if (!out.success) throw new Error(`deno ${args.join(" ")} failed:\n${text(out.stderr).slice(-3000)}`);
  return text(out.stdout);
}

/** Every file under `dir`, as paths relative to `root`, with its bytes. */
async function filesOf(root: string, dir: string, into = new Map<string, Uint8Array>()) {
  for await (const e of Deno.readDir(`${root}/${dir}`)) {
    const p = `${dir}/${e.name}`;
    if (e.isDirectory) await filesOf(root, p, into);
    else if (e.isFile) into.set(p, await Deno.readFile(`${root}/${p}`));
  }
  return into;
}

const same = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i]);

Deno.test({
  name:
    "fourth vendor: its provider definition, one line of the definitions' list and its bridge are all it takes",
  // The probe loads the API app (the OpenAPI document) in a child process of its own.
  sanitizeResources: true,
  fn: async () => {
    const copy = await Deno.makeTempDir({ prefix: "fourth_vendor_" });
    try {
      for (const name of COPIED) {
        const cp = await new Deno.Command("cp", { args: ["-r", `${ROOT_PATH}${name}`, `${copy}/`] }).output();
        assert.ok(cp.success, `copied ${name}`);
      }
      // The three code files.
      await Deno.writeTextFile(`${copy}/src/providers/definitions/vendor4.ts`, ENTRY);
      const listPath = `${copy}/src/providers/definitions/provider_types.ts`;
      const list = await Deno.readTextFile(listPath);
      const added = list
        .replace(
          'import { VENDOR3 } from "./vendor3.ts";\n',
          'import { VENDOR3 } from "./vendor3.ts";\nimport { VENDOR4 } from "./vendor4.ts";\n',
        )
        .replace("  vendor3: VENDOR3,\n", "  vendor3: VENDOR3,\n  vendor4: VENDOR4,\n");
      assert.equal(added.split("\n").length, list.split("\n").length + 2, "two lines added to the list");
      await Deno.writeTextFile(listPath, added);
      await Deno.mkdir(`${copy}/src/providers/vendor4`);
      await Deno.writeTextFile(`${copy}/src/providers/vendor4/bridge.ts`, BRIDGE);

      // Nothing else of the code differs from this tree.
      const before = await filesOf(ROOT_PATH, "src");
      const after = await filesOf(copy, "src");
      const changed = [...after].filter(([p, b]) => !before.has(p) || !same(before.get(p)!, b)).map(([p]) =>
        p
      );
      assert.deepEqual(changed.sort(), [
        "src/providers/definitions/provider_types.ts",
        "src/providers/definitions/vendor4.ts",
        "src/providers/vendor4/bridge.ts",
      ]);
      assert.deepEqual([...before.keys()].filter((p) => !after.has(p)), []);

      // It type-checks (the bridge's settings are typed by the entry's), and every surface knows it.
      await Deno.writeTextFile(`${copy}/probe.ts`, PROBE);
      await deno(copy, ["check", "--quiet", "probe.ts", "src/providers/vendor4/bridge.ts"]);
      const out = JSON.parse(await deno(copy, ["run", "-A", "--no-check", "probe.ts"]));
      const types = [...PROVIDER_TYPES, "vendor4"];
      assert.deepEqual(out.types, types);
      assert.deepEqual(out.enum, types);
      assert.equal(out.defaultUrl, "wss://api.vendor4.example/v1/agents");
      assert.equal(out.url, "wss://v4.test/agents");
      assert.match(out.refused, /^invalid configuration: SVC_VENDOR4_URL must be a wss:\/\/ URL/);
      assert.equal(out.variable, true);
      assert.equal(out.schema, true);
      assert.equal(out.shape, null);
      assert.equal(out.credential, "s3cr3t-t0ken");
      assert.equal(out.blanked, false, "the secret is blanked out of the body the schema sees");
      assert.deepEqual(out.cli, { vendor4: { token: "abc" } });
      assert.ok(out.demo.includes("vendor4"));
      assert.deepEqual(out.bridges, types);
      assert.equal(out.connect, "vendor4 would connect to wss://v4.test/agents");
      assert.deepEqual(out.openapi, { config: true, providerConfig: types, enum: types });

      // The worker side reaches its bridge through the bridges' dynamic import; the API app does not.
      const info = async (file: string) => {
        const json = JSON.parse(await deno(copy, ["info", "--json", file]));
        return json.modules.find((m: { specifier: string }) => m.specifier.endsWith(`/${file}`));
      };
      const bridges = await info("src/providers/bridges.ts");
      const dynamic = (bridges.dependencies ?? []).filter((d: { isDynamic?: boolean }) => d.isDynamic);
      assert.ok(
        dynamic.some((d: { code?: { specifier: string } }) =>
          d.code?.specifier.endsWith("/vendor4/bridge.ts")
        ),
        "bridges.ts imports vendor4/bridge.ts dynamically",
      );
      const app = JSON.parse(await deno(copy, ["info", "--json", "src/api/app.ts"]));
      assert.ok(!app.modules.some((m: { specifier: string }) => m.specifier.endsWith("/vendor4/bridge.ts")));
    } finally {
      await Deno.remove(copy, { recursive: true });
    }
  },
});

/** Lines of code (comments dropped) of every `.ts` file under `dir` that is no test. */
async function codeOf(dir: string, into = new Map<string, string>()): Promise<Map<string, string>> {
  for await (const e of Deno.readDir(new URL(dir, ROOT))) {
    const p = `${dir}/${e.name}`;
    if (e.isDirectory) await codeOf(p, into);
    else if (e.name.endsWith(".ts") && !e.name.endsWith("_test.ts")) {
      const text = await Deno.readTextFile(new URL(p, ROOT));
      into.set(p, text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:])\/\/.*$/gm, "$1"));
    }
  }
  return into;
}

/** Where a provider type's name may appear in code besides its own files (the types it may name): why. */
const ALLOWED: Record<string, string[]> = {
  // The demo page's engine is the embedded reference engine, which the demo reaches as an external engine.
  "src/api/routes/demo.ts": ["external_engine"],
  // Examples in `sessions create --help` (text: a new type needs none).
  "cli/commands/sessions_create.ts": ["vendor1_realtime", "vendor2", "vendor3", "external_engine"],
};

Deno.test("fourth vendor: no per-vendor list is left (no code names a provider type outside its own files)", async () => {
  const code = new Map([...await codeOf("src"), ...await codeOf("cli")]);
  const bad: string[] = [];
  for (const type of PROVIDER_TYPES) {
    const own = (p: string) =>
      p === "src/providers/definitions/provider_types.ts" ||
      p.startsWith(`src/providers/definitions/${type}.`) ||
      p.startsWith(`src/providers/definitions/${type}_`) || p.startsWith(`src/providers/${type}/`) ||
      (ALLOWED[p] ?? []).includes(type);
    const name = new RegExp(`\\b${type}\\b`);
    for (const [path, text] of code) if (!own(path) && name.test(text)) bad.push(`${path} names ${type}`);
  }
  assert.deepEqual(bad, []);
});
