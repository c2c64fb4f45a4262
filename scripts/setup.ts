/**
 * Set-up run by `deno task start` and `deno task test`: makes sure the Debian programs the service and
 * the tests need are present, installing the missing ones with apt-get when running as root.
 *
 * `--for start` needs espeak-ng (reference engine) and ffmpeg (media); `--for test` adds chromium
 * and firefox-esr (browser tests), janus and coturn (the `webrtc_sfu` tests start their own Janus and TURN server). Exits 1
 * with instructions when something is missing and cannot be installed.
 *
 * @module
 */
import { parseArgs } from "node:util";

const PROGRAMS: Record<string, { bin: string; pkg: string }[]> = {
  start: [{ bin: "espeak-ng", pkg: "espeak-ng" }, { bin: "ffmpeg", pkg: "ffmpeg" }],
  test: [
    { bin: "espeak-ng", pkg: "espeak-ng" },
    { bin: "ffmpeg", pkg: "ffmpeg" },
    { bin: "chromium", pkg: "chromium" },
    { bin: "firefox-esr", pkg: "firefox-esr" },
    { bin: "janus", pkg: "janus" },
    { bin: "turnserver", pkg: "coturn" },
  ],
};

async function has(bin: string): Promise<boolean> {
  try {
    const out = await new Deno.Command("sh", {
      args: ["-c", `command -v ${bin}`],
      stdout: "null",
      stderr: "null",
    })
      .output();
    return out.success;
  } catch {
    return false;
  }
}

async function run(cmd: string, args: string[]): Promise<boolean> {
  const out = await new Deno.Command(cmd, {
    args,
    stdout: "inherit",
    stderr: "inherit",
    env: { DEBIAN_FRONTEND: "noninteractive" },
  }).output();
  return out.success;
}

const { values } = parseArgs({ args: Deno.args, options: { for: { type: "string", default: "start" } } });
const wanted = PROGRAMS[values.for!];
if (!wanted) {
  console.error(`setup: --for must be one of ${Object.keys(PROGRAMS).join(", ")}`);
  Deno.exit(2);
}
const missing = [];
for (const p of wanted) if (!(await has(p.bin))) missing.push(p);
if (missing.length) {
  const pkgs = missing.map((p) => p.pkg);
  const root = Deno.uid?.() === 0;
  if (root && await has("apt-get")) {
    console.error(`setup: installing ${pkgs.join(", ")} with apt-get…`);
    const ok = await run("apt-get", ["update", "-qq"]) &&
      await run("apt-get", ["install", "-y", "-qq", "--no-install-recommends", ...pkgs]);
    if (!ok) {
      console.error(`setup: apt-get could not install ${pkgs.join(", ")}`);
      Deno.exit(1);
    }
  } else {
    console.error(
      `setup: missing ${
        missing.map((p) => p.bin).join(", ")
      }. Install them (Debian: sudo apt-get install -y ${pkgs.join(" ")}) and run again.`,
    );
    Deno.exit(1);
  }
}
