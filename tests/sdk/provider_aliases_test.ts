import assert from "node:assert/strict";
import { withProviderAliases } from "../../scripts/sdk_provider_aliases.ts";

const ROOT = new URL("../../", import.meta.url);

Deno.test("sdk/types.d.ts: the per-provider config aliases are generated from openapi.json and up to date", async () => {
  const types = await Deno.readTextFile(new URL("sdk/types.d.ts", ROOT));
  const document = JSON.parse(await Deno.readTextFile(new URL("openapi.json", ROOT)));
  assert.equal(types, withProviderAliases(types, document), "run `deno task sdk:types`");
  // One alias per provider type of the document (a new type gets its alias from the generator).
  const types_ = Object.keys(document.components.schemas.ProviderConfig.properties);
  for (const t of types_) assert.ok(types.includes(`/** \`provider_config.${t}\`. */`), t);
  // The generator writes what a fourth type would need.
  const grown = structuredClone(document);
  grown.components.schemas.ProviderConfig.properties.vendor4 = { $ref: "#/components/schemas/Vendor4Config" };
  assert.match(
    withProviderAliases(types, grown),
    /\/\*\* `provider_config\.vendor4`\. \*\/\nexport type Vendor4Config = components\["schemas"\]\["Vendor4Config"\];/,
  );
});
