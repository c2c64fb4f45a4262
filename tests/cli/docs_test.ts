/**
 * docs/cli.md and the CLI's help tree agree: the same commands in the top-level help, in the doc's
 * command table and as the doc's sections; each section shows the command's usage line and every flag the
 * command takes (the flags every API command takes in their own table), and documents no flag the command
 * does not have.
 */
import assert from "node:assert/strict";
import { API_OPTIONS } from "../../cli/api_client.ts";
import type { Io } from "../../cli/io.ts";
import { COMMANDS, run } from "../../cli/main.ts";

const DOC = await Deno.readTextFile(new URL("../../docs/cli.md", import.meta.url));

/** Runs the CLI in-process; returns what it printed on stdout. */
async function help(args: string[]): Promise<string> {
  let out = "";
  const io: Io = {
    stdout: (t) => void (out += t),
    stderr: () => {},
    stdoutIsTerminal: false,
    stderrIsTerminal: false,
    noColor: true,
    env: () => undefined,
    readTextFile: () => Promise.reject(new Error("unused")),
    readStdin: () => Promise.resolve(""),
  };
  assert.equal(await run(args, io), 0, args.join(" "));
  return out;
}

/** The doc's `## …` sections, by heading. */
function sections(): Map<string, string> {
  const map = new Map<string, string>();
  const parts = DOC.split(/^## /m).slice(1);
  for (const part of parts) {
    const nl = part.indexOf("\n");
    map.set(part.slice(0, nl).trim(), part.slice(nl + 1));
  }
  return map;
}

Deno.test("cli docs: docs/cli.md lists exactly the commands of the CLI's help", async () => {
  const names = COMMANDS.map((c) => c.path.join(" ")).sort();
  // the top-level help's command list
  const top = await help(["--help"]);
  const listed = top.split("Commands:\n")[1].split("\n\n")[0].split("\n").map((l) =>
    l.trim().split(/\s{2,}/)[0]
  );
  assert.deepEqual([...listed].sort(), names, "the top-level help lists every command");
  // every group's help lists its commands
  for (const group of new Set(COMMANDS.map((c) => c.path[0]))) {
    const text = await help([group, "--help"]);
    for (const c of COMMANDS.filter((c) => c.path[0] === group)) {
      assert.ok(text.includes(c.path.join(" ")), `${group} --help lists ${c.path.join(" ")}`);
    }
  }
  // the doc's command table
  const table = [...DOC.matchAll(/^\| \[`([a-z]+ [a-z]+)`\]\(#([a-z-]+)\)/gm)];
  assert.deepEqual(table.map((m) => m[1]).sort(), names, "the command table of docs/cli.md");
  for (const m of table) assert.equal(m[2], m[1].replace(" ", "-"), `the anchor of ${m[1]}`);
  // the doc's sections
  const headings = [...sections().keys()].filter((h) => /^[a-z]+ [a-z]+$/.test(h)).sort();
  assert.deepEqual(headings, names, "one section per command in docs/cli.md");
});

Deno.test("cli docs: each command's section shows its usage and documents exactly its flags", () => {
  const docs = sections();
  const apiTable = docs.get("Flags every API command takes")!;
  assert.ok(apiTable, "the shared flags have their section");
  const apiNames = new Set(API_OPTIONS.map((o) => o.name));
  for (const o of API_OPTIONS) {
    assert.ok(apiTable.includes(`\`--${o.name}`), `--${o.name} in the shared table`);
  }
  for (const command of COMMANDS) {
    const name = command.path.join(" ");
    const section = docs.get(name)!;
    assert.match(section, new RegExp(`^\`deno task cli ${name}[ \`]`, "m"), `${name}: its usage line`);
    const own = command.options.filter((o) => !apiNames.has(o.name));
    for (const o of own) {
      assert.ok(section.includes(`--${o.name}`), `${name}: --${o.name} is documented`);
    }
    const takesApiFlags = command.options.some((o) => o.name === "api-key");
    const known = new Set(command.options.map((o) => o.name));
    // flags named in the section's tables and usage line must exist
    const documented = [
      ...section.matchAll(/^\| `--([a-z-]+)/gm),
      ...(section.match(/^`deno task cli [^`]+`/m)?.[0].matchAll(/--([a-z-]+)/g) ?? []),
    ].map((m) => m[1]);
    for (const flag of documented) {
      assert.ok(known.has(flag), `${name}: docs/cli.md documents --${flag}, which it does not take`);
    }
    if (takesApiFlags) {
      for (const o of API_OPTIONS) {
        assert.ok(known.has(o.name), `${name} takes --${o.name} like every API command`);
      }
    }
  }
});
