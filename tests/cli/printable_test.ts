/**
 * Text from the service reaches the operator's terminal with every hidden character escaped: C0/C1
 * controls, bidi overrides and isolates, zero-width characters, U+2028/2029, the BOM and lone surrogates.
 * The API refuses such key names, but the CLI does not rely on that (an older service, a proxy, a message
 * quoting input): here it is fed answers that carry them, in-process.
 */
import assert from "node:assert/strict";
import { run } from "../../cli/main.ts";
import type { Io } from "../../cli/io.ts";
import { printable, printableJson } from "../../cli/printable.ts";

/** One of each kind of character that must never be printed raw. */
const HOSTILE = [
  "\x1b[2J", // ESC: a terminal control sequence (clear screen)
  "\x07", // BEL
  "\r", // carriage return: overwrite the line
  "\n",
  "\x7f", // DEL
  "\x9b", // C1 CSI
  "\x85", // C1 NEL
  "\u202e", // right-to-left override
  "\u2066", // left-to-right isolate
  "\u200b", // zero-width space
  "\u200d", // zero-width joiner
  "\u2060", // word joiner
  "\ufeff", // BOM
  "\u2028", // line separator
  "\u2029", // paragraph separator
  "\ud800", // lone high surrogate
  "\udfff", // lone low surrogate
];
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u;

Deno.test("printable: every hidden character becomes a visible \\u{…} escape; plain text is untouched", () => {
  for (const c of HOSTILE) {
    const out = printable(`a${c}b`);
    assert.ok(!HIDDEN.test(out), `${JSON.stringify(c)} → ${JSON.stringify(out)}`);
    assert.match(out, /^a(\\u\{[0-9A-F]{4,6}\}|\[2J)+b$/);
  }
  assert.equal(printable("\u202egnp.exe"), "\\u{202E}gnp.exe");
  assert.equal(printable("\ud800"), "\\u{D800}");
  const plain = "Ünïcödé key — 日本語 ✔ 😀 tab-free, quotes \"'` and \\ backslash";
  assert.equal(printable(plain), plain);
});

Deno.test("printableJson: the same JSON value, with hidden characters as \\u escapes", () => {
  const value = { name: `x${HOSTILE.join("")}y`, list: ["\u2028", "ok"], n: 1 };
  for (const indent of [undefined, 2]) {
    const out = printableJson(value, indent);
    assert.deepEqual(JSON.parse(out), value, "parses back to exactly the value");
    const withoutLayout = indent ? out.replaceAll("\n", "") : out;
    assert.ok(!HIDDEN.test(withoutLayout), withoutLayout);
  }
  assert.equal(printableJson({ a: "\u202e" }), '{"a":"\\u202e"}');
});

/** An in-process Io whose fetch answers `answer` to every request. */
function fakeIo(answer: () => Response): Io & { out: string; err: string } {
  const io = {
    out: "",
    err: "",
    stdout: (t: string) => void (io.out += t),
    stderr: (t: string) => void (io.err += t),
    stdoutIsTerminal: false,
    stderrIsTerminal: false,
    noColor: true,
    env: (name: string) =>
      ({ SVC_API_URL: "http://svc.test", SVC_API_KEY: "svc_sk_test" } as Record<string, string>)[name],
    readTextFile: () => Promise.reject(new Error("no files")),
    readStdin: () => Promise.resolve(""),
    fetch: () => Promise.resolve(answer()),
  };
  return io;
}

Deno.test("cli: names and messages from the service are printed with hidden characters escaped", async () => {
  const name = `ops${HOSTILE.join("")}team`;
  const key = {
    key_id: "svc_key_AAAAAAAAAAAAAAAAAAAAAA",
    name,
    scopes: ["sessions:read"],
    status: "active",
    created_at: 1_700_000_000_000,
    revoked_at: null,
    hint: "abcd",
  };
  for (const args of [["keys", "list"], ["keys", "list", "--json"]]) {
    const io = fakeIo(() => Response.json({ data: [key], has_more: false }));
    assert.equal(await run(args, io), 0, io.err);
    const layout = args.includes("--json") ? io.out.replace(/\n$/, "") : io.out.replaceAll("\n", "");
    assert.ok(
      !HIDDEN.test(layout),
      `${args.join(" ")} printed a hidden character: ${JSON.stringify(io.out)}`,
    );
    if (args.includes("--json")) {
      assert.equal(JSON.parse(io.out).data[0].name, name, "the JSON value is intact");
    } else assert.ok(io.out.includes("ops\\u{001B}[2J\\u{0007}"), io.out);
  }
  // an error answer whose message carries them
  const io = fakeIo(() =>
    Response.json({
      code: "SVC_INVALID_REQUEST",
      message: `bad name: ${name}`,
      request_id: "5f0c3a2e-8d7b-4a51-9d7e-0b6a1f1f2c3d\u202e",
      doc_url: "https://svc.test/docs/errors#svc_invalid_request",
    }, { status: 400 })
  );
  assert.equal(await run(["keys", "create", "--name", "x"], io), 1);
  assert.equal(io.out, "");
  assert.ok(!HIDDEN.test(io.err.replaceAll("\n", "")), JSON.stringify(io.err));
  assert.match(io.err, /^error: SVC_INVALID_REQUEST: bad name: ops\\u\{001B\}\[2J/m);
  assert.match(io.err, /request_id: 5f0c3a2e-8d7b-4a51-9d7e-0b6a1f1f2c3d\\u\{202E\}$/m);
});
