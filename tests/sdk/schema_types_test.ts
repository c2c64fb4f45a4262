/**
 * `sdk/schema.d.ts` is exactly what openapi-typescript emits from the committed `openapi.json` with the
 * options of `deno task sdk:types`; the check is sensitive to any change of the document.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url);

/** The `sdk:types` task's command line, split into words. */
async function taskWords(): Promise<string[]> {
  const config = JSON.parse(await Deno.readTextFile(new URL("deno.json", ROOT)));
  const words = (config.tasks["sdk:types"] as string).split(/\s+/);
  assert.deepEqual(words.slice(0, 3), ["deno", "run", "-A"]);
  assert.ok(words.includes("openapi.json") && words.includes("sdk/schema.d.ts"));
  return words;
}

/** Runs the task's generator with `--check` on `input` against `output`; returns the exit code. */
async function check(input: string, output: string): Promise<{ code: number; text: string }> {
  const words = (await taskWords()).slice(1).map((w) =>
    w === "openapi.json" ? input : w === "sdk/schema.d.ts" ? output : w
  );
  const out = await new Deno.Command(Deno.execPath(), {
    args: [...words, "--check"],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  return {
    code: out.code,
    text: new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr),
  };
}

Deno.test("sdk types: sdk/schema.d.ts is what the generator emits from openapi.json", async () => {
  const res = await check("openapi.json", "sdk/schema.d.ts");
  assert.equal(res.code, 0, `sdk/schema.d.ts is stale: run \`deno task sdk:types\`\n${res.text}`);
});

Deno.test("sdk types: the drift check fails when openapi.json changes", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sdk_types_" });
  try {
    const doc = JSON.parse(await Deno.readTextFile(new URL("openapi.json", ROOT)));
    doc.components.schemas.Session.properties.label = { type: "string" };
    await Deno.writeTextFile(`${dir}/openapi.json`, JSON.stringify(doc));
    await Deno.copyFile(new URL("sdk/schema.d.ts", ROOT), `${dir}/schema.d.ts`);
    const stale = await check(`${dir}/openapi.json`, `${dir}/schema.d.ts`);
    assert.notEqual(stale.code, 0, stale.text);
    assert.match(stale.text, /not up-to-date/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
