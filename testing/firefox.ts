/**
 * Debian's Firefox ESR (`/usr/bin/firefox-esr`), headless, driven by `puppeteer-core` over WebDriver BiDi —
 * the project's second browser engine (never a downloaded browser: puppeteer-core downloads nothing, and
 * the executable is Debian's). Headless Firefox on a machine without a sound server has no audio device:
 * `media.cubeb.force_mock_context` gives it a mock one, on which an `AudioContext` runs and its output
 * timestamps advance as on a device, though slower than real time; the benches give it a real-time one
 * ({@link startSoundServer}).
 *
 * @module
 */
import puppeteer, { type Browser } from "puppeteer-core";

/** Where Debian installs Firefox ESR. */
export const FIREFOX = "/usr/bin/firefox-esr";

/**
 * A sound server for Firefox to play to: PulseAudio (Debian's `pulseaudio`) with one null sink, in a
 * runtime directory of its own. Its sink consumes the sound at the system clock's rate, as a sound card
 * does, and Firefox reports its output latency: the audio clock a user's Firefox runs on. (The mock context
 * of `media.cubeb.force_mock_context` runs about 3 % slower than real time — measured, 30 ms a second — so
 * figures of sound against the wall clock made on it say nothing of a user's browser.) Firefox ESR 153's sound on
 * it can deadlock — a page's first read of a context's output latency, now and then: docs/media-plane.md, "In
 * Firefox" —, so the tests stay on the mock device, where it was never seen.
 */
export interface SoundServer {
  /** The environment a client needs to find it. */
  env: Record<string, string>;
  /**
   * The output latency of each stream playing to it now (ms): what the server holds of the stream and has
   * not played yet plus its sink's own latency (`pactl list sink-inputs`: "Buffer Latency" + "Sink
   * Latency") — the sound server's account, asked outside the browser.
   */
  streamLatencies(): Promise<number[]>;
  stop(): Promise<void>;
}

/** Parses `pactl list sink-inputs`: each input's buffer latency + sink latency (ms). Exported for its test. */
export function parseStreamLatencies(text: string): number[] {
  return text.split(/^Sink Input #/m).slice(1).flatMap((block) => {
    const buffer = /Buffer Latency: (\d+) usec/.exec(block);
    const sink = /Sink Latency: (\d+) usec/.exec(block);
    return buffer && sink ? [(Number(buffer[1]) + Number(sink[1])) / 1000] : [];
  });
}

/** Starts {@link SoundServer}; null when `pulseaudio` is not installed. */
export async function startSoundServer(): Promise<SoundServer | null> {
  const dir = await Deno.makeTempDir({ prefix: "svc-pulse-" });
  const env = { XDG_RUNTIME_DIR: dir, PULSE_SERVER: `unix:${dir}/pulse/native` };
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command("pulseaudio", {
      args: [
        "-n", // no default configuration: only the modules below
        "--daemonize=no",
        "--exit-idle-time=-1",
        "--disallow-exit",
        "--load=module-null-sink sink_name=null",
        "--load=module-native-protocol-unix",
      ],
      env,
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
  } catch (err) {
    await Deno.remove(dir, { recursive: true });
    if (err instanceof Deno.errors.NotFound) return null;
    throw err;
  }
  const stderr = new Response(child.stderr).text();
  const stop = async () => {
    try {
      child.kill("SIGTERM");
    } catch { /* exited */ }
    await child.status;
    await stderr;
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  const end = Date.now() + 10_000;
  for (;;) {
    try {
      await Deno.stat(`${dir}/pulse/native`);
      const streamLatencies = async () => {
        const out = await new Deno.Command("pactl", { args: ["list", "sink-inputs"], env, stderr: "null" })
          .output();
        if (!out.success) throw new Error(`pactl list sink-inputs failed (exit ${out.code})`);
        return parseStreamLatencies(new TextDecoder().decode(out.stdout));
      };
      return { env, streamLatencies, stop };
    } catch { /* not yet */ }
    const exited = await Promise.race([child.status.then(() => true), sleep(50).then(() => false)]);
    if (exited || Date.now() > end) {
      await stop();
      throw new Error(`pulseaudio did not start: ${(await stderr).trim().slice(-500)}`);
    }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Launches headless Firefox ESR. `autoplay: "allowed"` lets media (and an `AudioContext`) start without a
 * user gesture; by default it is Firefox's own rule, as in a user's browser: sound waits for a click.
 * `sound`: play to this sound server; by default a mock audio device (see {@link SoundServer}).
 */
export async function launchFirefox(
  options: { autoplay?: "allowed" | "gesture"; sound?: SoundServer } = {},
): Promise<Browser> {
  return await puppeteer.launch({
    browser: "firefox",
    executablePath: FIREFOX,
    headless: true,
    ...(options.sound ? { env: { ...Deno.env.toObject(), ...options.sound.env } } : {}),
    extraPrefsFirefox: {
      ...(options.sound ? {} : { "media.cubeb.force_mock_context": true }),
      // (0: allowed; 1: blocked until a user gesture, Firefox's default for audible media)
      ...(options.autoplay === "allowed" ? { "media.autoplay.default": 0 } : {}),
      "media.autoplay.block-webaudio": options.autoplay !== "allowed",
      "datareporting.policy.dataSubmissionEnabled": false,
      "browser.shell.checkDefaultBrowser": false,
    },
  });
}

/**
 * Closes a Firefox from {@link launchFirefox}; one whose sound deadlocked (docs/media-plane.md, "In Firefox")
 * may never answer, so it is killed if not closed within `ms`.
 */
export async function closeFirefox(browser: Browser, ms = 10_000): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    browser.close().catch(() => {}),
    new Promise((r) => timer = setTimeout(r, ms)),
  ]);
  clearTimeout(timer);
  browser.process()?.kill("SIGKILL");
}
