/**
 * On a terminal (a pseudo-terminal from util-linux `script`), `sessions create` shows a spinner on stderr
 * while the session starts, then a success line; with `--json` it shows none, and stdout is the JSON.
 */
import assert from "node:assert/strict";
import { baseEnv } from "../../testing/cli.ts";
import { startTestService } from "../../testing/service.ts";

const SCRIPT = "/usr/bin/script";
const ROOT = new URL("../../", import.meta.url);

/** Runs the CLI with `args` on a pseudo-terminal; returns everything the terminal showed. */
async function onTerminal(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; screen: string }> {
  const quoted = args.map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(" ");
  const out = await new Deno.Command(SCRIPT, {
    args: ["-qfec", `'${Deno.execPath()}' task --quiet cli ${quoted}`, "/dev/null"],
    cwd: ROOT,
    clearEnv: true,
    env: { ...baseEnv(), TERM: "xterm", ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: out.code, screen: new TextDecoder().decode(out.stdout) };
}

Deno.test({
  name: "cli on a terminal: a spinner while the session starts, none with --json",
  ignore: !(await Deno.stat(SCRIPT).then(() => true, () => false)),
  async fn() {
    const svc = await startTestService();
    try {
      const env = { SVC_API_URL: svc.url, SVC_API_KEY: await svc.key("proj_tty") };
      const flags = [
        "sessions",
        "create",
        "--provider",
        "external_engine",
        "--engine-url",
        svc.engine.url,
        "--engine-header",
        `Authorization: Bearer ${svc.engine.token}`,
      ];
      const table = await onTerminal(flags, env);
      assert.equal(table.code, 0, table.screen);
      assert.match(table.screen, /Starting session \(external_engine\)…/, "the spinner's text");
      assert.match(table.screen, /✔.* Session session:\S+ is active \(\d+\.\d s\)/, "its success line");
      assert.match(table.screen, /session_id.*session:/);
      assert.ok(!table.screen.includes(svc.engine.token));

      const json = await onTerminal([...flags, "--json"], env);
      assert.equal(json.code, 0, json.screen);
      assert.doesNotMatch(json.screen, /Starting session/);
      assert.equal(JSON.parse(json.screen.trim()).status, "active", "the terminal shows only the JSON");
    } finally {
      await svc.close();
    }
  },
});
