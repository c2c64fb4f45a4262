/**
 * `deno run -A bench/player_runs.ts`: the browser player, many times over. Each run opens a fresh page in Debian's
 * headless Chromium (fake microphone, autoplay allowed, sound on, as on the demo page), has a backend
 * create a session on the in-process reference engine, starts `sdk/player.js` on it, and checks that the
 * avatar really plays: the player says `playing`, the `<video>` is not paused, its clock and its decoded
 * video frames advance and audio is decoded. Then the player is closed and the session ended.
 *
 * Not part of CI (it takes minutes): it is the repeat-run proof that no interleaving of the browser's
 * events leaves a frozen, silent avatar behind a `playing` state.
 *
 * Options: `--runs N` (default 50), `--deadline-ms N` per run (default 30000), `--busy` (keeps every core
 * busy meanwhile with scripts/cpu_hog.ts), `--player <file>` (serves another player file instead of
 * `sdk/player.js`, e.g. an older version, to compare). Prints one line per run and a summary, writes
 * `bench/results/player-<time>.json` (git-ignored) and exits 1 unless every run played.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { createClient } from "@avatar-svc/sdk";
import { loadConfig } from "../src/config.ts";
import { createApiKey } from "../src/kv/api_keys.ts";
import { silentLogger } from "../src/log.ts";
import { compose as startService, openKv } from "../src/app/compose.ts";
import { launchChromium } from "../testing/browser.ts";

const args = parseArgs({
  args: Deno.args,
  options: {
    runs: { type: "string", default: "50" },
    "deadline-ms": { type: "string", default: "30000" },
    busy: { type: "boolean", default: false },
    player: { type: "string" },
  },
}).values;
const runs = Number(args.runs);
const deadlineMs = Number(args["deadline-ms"]);
if (!Number.isInteger(runs) || runs < 1 || runs > 1000) throw new Error("--runs: 1..1000");
if (!Number.isInteger(deadlineMs) || deadlineMs < 1000) throw new Error("--deadline-ms: at least 1000");
const playerOverride = args.player ? await Deno.readTextFile(args.player) : null;

/** What one run saw. */
interface RunResult {
  run: number;
  played: boolean;
  /** Why it did not play (the last observation). */
  problem?: string;
  ttffMs: number | null;
  /** Wall time from createPlayer to "really playing" (state, element, clock, frames, audio). */
  confirmedMs: number | null;
  states: string[];
}

/** Runs in the page: starts a player on the session. `createPlayer` comes from /sdk/player.js. */
const START = `async ({ mediaUrl, clientToken }) => {
  const { createPlayer } = await import("/sdk/player.js");
  const video = document.createElement("video");
  document.body.append(video);
  const g = globalThis;
  g.states = [];
  g.t0 = performance.now();
  g.player = createPlayer({
    video, mediaUrl, clientToken,
    onState: (s) => g.states.push(s.state + (s.reason ? " (" + s.reason + ")" : "")),
    refreshToken: () => g.freshToken(),
  });
}`;

/** Runs in the page: one observation. */
const OBSERVE = `(() => {
  const v = document.querySelector("video");
  return {
    state: globalThis.player.state(),
    states: globalThis.states,
    paused: v.paused,
    time: v.currentTime,
    frames: v.getVideoPlaybackQuality().totalVideoFrames,
    // audio decoded: by the player (WebCodecs, ms) or by the element (Media Source Extensions, bytes)
    audioBytes: globalThis.player.stats().audioDecodedMs ?? v.webkitAudioDecodedByteCount,
    elapsed: performance.now() - globalThis.t0,
    readyState: v.readyState,
    buffered: Array.from({ length: v.buffered.length }, (_, i) => [v.buffered.start(i), v.buffered.end(i)]),
    error: v.error ? v.error.code + " " + v.error.message : null,
    stats: globalThis.player.stats(),
  };
})()`;

interface Observation {
  state: { state: string; ttffMs: number | null; reason?: string };
  states: string[];
  paused: boolean;
  time: number;
  frames: number;
  audioBytes: number;
  elapsed: number;
  readyState: number;
  buffered: [number, number][];
  error: string | null;
  stats: Record<string, number>;
}

const dir = await Deno.makeTempDir({ prefix: "bench_player_" });
const config = loadConfig({
  PORT: "0",
  SVC_KV: `${dir}/svc.kv`,
  SVC_REFERENCE_ENGINE_PORT: "0",
  SVC_REFERENCE_ENGINE_DIR: `${dir}/engine`,
  SVC_DEMO_PAGE: "false",
});
const service = await startService(config, { logger: silentLogger });
const kv = await openKv(config.kv);
const hog = args.busy
  ? new Deno.Command(Deno.execPath(), {
    args: ["run", new URL("../scripts/cpu_hog.ts", import.meta.url).pathname, "--seconds", "7200"],
    stdout: "null",
    stderr: "null",
  }).spawn()
  : null;
const browser = await launchChromium({ media: true });
const results: RunResult[] = [];
try {
  const { plaintext } = await createApiKey(kv, {
    projectId: "proj_bench_player",
    name: "bench",
    scopes: ["sessions:read", "sessions:write"],
    now: Date.now(),
    createdBy: "bootstrap",
  });
  const backend = createClient({ baseUrl: service.url!, apiKey: plaintext, retry: true });
  const engine = service.referenceEngine!;
  for (let run = 1; run <= runs; run++) {
    const session = await backend.createSession({
      provider_type: "external_engine",
      provider_config: {
        external_engine: { url: engine.url, auth_headers: { Authorization: `Bearer ${engine.token}` } },
      },
    });
    const context = await browser.newContext();
    const result: RunResult = { run, played: false, ttffMs: null, confirmedMs: null, states: [] };
    try {
      const page = await context.newPage();
      if (playerOverride !== null) {
        await page.route(
          "**/sdk/player.js",
          (route) => route.fulfill({ body: playerOverride, contentType: "text/javascript" }),
        );
      }
      await page.exposeFunction("freshToken", async () => {
        const t = await backend.createClientToken(session.session_id);
        return { clientToken: t.client_token };
      });
      await page.goto(`${service.url}/docs/errors`); // any page of the service: same origin as the player
      await page.evaluate(
        `(${START})(${
          JSON.stringify({ mediaUrl: session.stream_metadata.media_url, clientToken: session.client_token })
        })`,
      );
      // Really playing: the state says so, the element is not paused, and since the first such
      // observation its clock moved a second, frames were decoded and audio was decoded.
      const deadline = Date.now() + deadlineMs;
      let base: Observation | null = null;
      let last: Observation | null = null;
      while (Date.now() < deadline) {
        const o = await page.evaluate(OBSERVE) as Observation;
        last = o;
        if (o.state.state === "failed" || o.state.state === "ended") break;
        const ok = o.state.state === "playing" && !o.paused;
        if (!ok) base = null;
        else if (!base) base = o;
        else if (o.time > base.time + 1 && o.frames > base.frames && o.audioBytes > base.audioBytes) {
          result.played = true;
          result.confirmedMs = Math.round(o.elapsed);
          break;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      result.ttffMs = last?.state.ttffMs ?? null;
      result.states = last?.states ?? [];
      if (!result.played && last) {
        result.problem = `state ${last.state.state}${
          last.state.reason ? ` (${last.state.reason})` : ""
        }, paused ${last.paused}, currentTime ${
          last.time.toFixed(2)
        }, frames ${last.frames}, audio bytes ${last.audioBytes}, readyState ${last.readyState}, buffered ${
          JSON.stringify(last.buffered)
        }, error ${last.error}, stats ${JSON.stringify(last.stats)}`;
      }
      await page.evaluate("globalThis.player.close()");
    } catch (err) {
      result.problem = `error: ${err}`;
    } finally {
      await context.close();
      await backend.endSession(session.session_id, { force: true }).catch(() => {});
    }
    results.push(result);
    console.log(
      `run ${String(run).padStart(3)}: ${result.played ? "played" : "FROZEN"}  ttff ${
        result.ttffMs ?? "-"
      } ms` +
        `  confirmed ${result.confirmedMs ?? "-"} ms  ${result.problem ?? ""}`,
    );
  }
} finally {
  await browser.close();
  if (hog) {
    hog.kill();
    await hog.status;
  }
  kv.close();
  await service.close();
  await Deno.remove(dir, { recursive: true });
}

const played = results.filter((r) => r.played).length;
const ttffs = results.flatMap((r) => (r.played && r.ttffMs !== null ? [r.ttffMs] : [])).sort((a, b) => a - b);
const pct = (p: number) =>
  ttffs.length ? ttffs[Math.min(ttffs.length - 1, Math.ceil(p / 100 * ttffs.length) - 1)] : null;
const summary = {
  runs,
  played,
  busy: args.busy,
  player: args.player ?? "sdk/player.js",
  ttff_ms: { p50: pct(50), p95: pct(95), max: ttffs.at(-1) ?? null },
  load_average_after: (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" "),
  failures: results.filter((r) => !r.played),
};
console.log(
  `\nplayed ${played} of ${runs}${
    args.busy ? " (every core kept busy)" : ""
  }; ttff p50 ${summary.ttff_ms.p50} ms, ` +
    `p95 ${summary.ttff_ms.p95} ms; load average after: ${summary.load_average_after}`,
);
const outDir = new URL("./results/", import.meta.url);
await Deno.mkdir(outDir, { recursive: true });
const file = new URL(`player-${new Date().toISOString().replace(/[:.]/g, "-")}.json`, outDir);
await Deno.writeTextFile(file, JSON.stringify({ summary, results }, null, 2));
console.log(`results: ${file.pathname}`);
Deno.exit(played === runs ? 0 : 1);
