/**
 * The CLI's command line: `--help` on every group and command, usage errors (exit 2, nothing on stdout,
 * no flag value echoed), and a service that cannot be reached (exit 1).
 */
import assert from "node:assert/strict";
import { COMMANDS } from "../../cli/main.ts";
import { type CliResult, runCli } from "../../testing/cli.ts";
import { closedPort } from "../../testing/service.ts";

const CANARY = "canary-s3cret-b81d2e";
const ENV = { SVC_API_URL: "http://127.0.0.1:9", SVC_API_KEY: "svc_sk_unused" };

/** Runs many CLI invocations, a few at a time. */
async function runAll(cases: { args: string[]; env?: Record<string, string>; stdin?: string }[]) {
  const results: CliResult[] = [];
  for (let i = 0; i < cases.length; i += 4) {
    results.push(...await Promise.all(cases.slice(i, i + 4).map((c) => runCli(c.args, c))));
  }
  return results;
}

Deno.test("cli help: every group and command has --help (exit 0) listing its options", async () => {
  const cases = [
    ...COMMANDS.map((c) => ({ args: [...c.path, "--help"] })),
    ...COMMANDS.map((c) => ({ args: [...c.path, "-h"] })),
    { args: ["--help"] },
    { args: ["help"] },
    { args: ["keys", "--help"] },
    { args: ["sessions", "-h"] },
    { args: ["admin", "--help"] },
  ];
  const results = await runAll(cases);
  results.forEach((r, i) => {
    const label = cases[i].args.join(" ");
    assert.equal(r.code, 0, `${label}: ${r.stderr}`);
    assert.equal(r.stderr, "", label);
    assert.match(r.stdout, /^Usage: deno task cli /, label);
  });
  COMMANDS.forEach((command, i) => {
    const help = results[i].stdout;
    assert.ok(help.includes(command.path.join(" ")), command.path.join(" "));
    for (const option of command.options) {
      assert.ok(help.includes(`--${option.name}`), `${command.path} --${option.name}`);
    }
    for (const p of command.positionals ?? []) assert.ok(help.includes(`<${p.name}>`));
    assert.equal(results[i + COMMANDS.length].stdout, help, "-h is --help");
  });
  const top = results[COMMANDS.length * 2].stdout;
  for (const command of COMMANDS) {
    assert.ok(top.includes(command.path.join(" ")), `top help lists ${command.path}`);
  }
  assert.match(top, /SVC_API_URL/);
  assert.match(top, /Exit codes: 0 success, 1 API error .*, 2 usage error/);
  assert.match(results.at(-3)!.stdout, /keys create/);
  assert.doesNotMatch(results.at(-3)!.stdout, /sessions create/);
  assert.match(results.at(-1)!.stdout, /--project <id>/);
  // a bare group or no command at all prints the help, as a usage error
  const bare = await runAll([{ args: [] }, { args: ["keys"] }, { args: ["sessions"] }]);
  for (const r of bare) {
    assert.equal(r.code, 2);
    assert.match(r.stdout, /^Usage:/);
  }
});

Deno.test("cli usage errors: exit 2 with a message on stderr, nothing on stdout", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/bad.json`, `{"provider_type": "vendor2", "token": "${CANARY}"`);
    await Deno.writeTextFile(`${dir}/list.json`, `["${CANARY}"]`);
    const cases: [string[], RegExp, Record<string, string>?, string?][] = [
      [["keys", "list"], /no API key: set SVC_API_KEY or pass --api-key/, {
        SVC_API_URL: "http://127.0.0.1:9",
      }],
      [["sessions", "get", "session:x"], /no API key/, {}],
      [["keys", "create"], /--name <name> is required/],
      [["keys", "list", "--bogus"], /Unknown option '--bogus'/],
      [["keys", "list", "--limit", "ten"], /--limit must be a whole number/],
      [["keys", "list", "--retries", "99"], /--retries must be a whole number in 0..10/],
      [["keys", "revoke"], /<key_id> is required/],
      [["keys", "revoke", "a", "b"], /takes 1 argument/],
      [["sessions", "end"], /<session_id> is required/],
      [
        ["sessions", "get", "session:x", "--api-url", "ftp://x"],
        /--api-url \/ SVC_API_URL must be an http\(s\) URL/,
      ],
      [
        ["sessions", "get", "session:x", "--api-url", "not a url"],
        /--api-url \/ SVC_API_URL must be an absolute/,
      ],
      [["sessions", "create"], /--provider <type> is required/],
      [
        ["sessions", "create", "--provider", "vendor2", "--engine-url", "wss://x"],
        /--engine-url applies to --provider external_engine only/,
      ],
      [
        ["sessions", "create", "--provider", "external_engine", "--sample-rate", "fast"],
        /--sample-rate must be a whole number/,
      ],
      [
        ["sessions", "create", "--provider", "vendor2", "--idempotency-key", "has space"],
        /--idempotency-key must be/,
      ],
      [
        ["sessions", "create", "--config", `${dir}/missing.json`],
        /--config: cannot read .*missing\.json \(NotFound\)/,
      ],
      [["sessions", "create", "--config", `${dir}/list.json`], /must hold a JSON object/],
      [
        ["sessions", "create", "--config", "-"],
        /standard input is not valid JSON/,
        undefined,
        `{"secret": "${CANARY}"`,
      ],
      [["sessions", "create", "--config", `${dir}/bad.json`], /bad\.json is not valid JSON/],
      [
        ["sessions", "create", "--config", `${dir}/list.json`, "--provider", "vendor2"],
        /must hold a JSON object/,
      ],
      [
        ["sessions", "create", "--provider", "external_engine", "--engine-header", `Bearer ${CANARY}`],
        /--engine-header #1 must look like 'Name: value' \(its value is not shown\)/,
      ],
      [
        ["sessions", "create", "--provider", "vendor2", `Authorization: Bearer ${CANARY}`],
        /takes no positional arguments/,
      ],
      [["sessions", "get", "session:x", CANARY], /takes 1 argument\(s\): <session_id>/],
      [["sessions", "create", "--access-token"], /argument missing/],
      [["keys", "delete"], /unknown command: keys delete/],
      [["nope"], /unknown command: nope/],
    ];
    const results = await runAll(
      cases.map(([args, , env, stdin]) => ({ args, env: env ?? ENV, stdin })),
    );
    results.forEach((r, i) => {
      const [args, pattern] = cases[i];
      const label = args.join(" ");
      assert.equal(r.code, 2, `${label}: ${r.stderr}`);
      assert.equal(r.stdout, "", label);
      assert.match(r.stderr, pattern, label);
      assert.ok(!r.stderr.includes(CANARY), `${label} echoed a value: ${r.stderr}`);
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("cli: a service that cannot be reached is an API error (exit 1), reported without a request id", async () => {
  const port = closedPort();
  const [plain, json] = await runAll([
    { args: ["sessions", "get", "session:x"], env: { ...ENV, SVC_API_URL: `http://127.0.0.1:${port}` } },
    { args: ["keys", "list", "--json", "--api-url", `http://127.0.0.1:${port}`], env: ENV },
  ]);
  for (const r of [plain, json]) {
    assert.equal(r.code, 1, r.stderr);
    assert.equal(r.stdout, "");
    assert.match(r.stderr, /^error: SDK_NETWORK_ERROR: The service could not be reached/m);
    assert.match(r.stderr, /^ {2}request_id: \(none: no answer from the service\)$/m);
  }
});
