/**
 * `deno run -A bench/encoder_start.ts [--rounds N]`: what a video client waits for its first frame with and
 * without encoders started ahead (`SVC_RENDER_ENCODER_SPARES`, `src/media/encoder_spares.ts`), side by side
 * in one run: two service processes on the same core (the last), one with `SVC_RENDER_ENCODER_SPARES=0`, one
 * with `1`, taking turns. Each round creates one session on each and measures, from outside (a WebSocket
 * client in this process, on the other cores): the first connect → first decodable frame (the session
 * started without an encoder: the plane knew the stream's configuration) and a reconnect 500 ms after the
 * first client left (its encoder retired). Also: an ffmpeg spawn's time to its first encoded frame, cold and
 * spawned ahead, and an idle spare's memory.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { generateEngineTls } from "../engine/mod.ts";
import { startBenchEngine, wallNow } from "./engine.ts";
import { createSession, endSession, startServiceProcess } from "./service_child.ts";
import { readSegment } from "../testing/media.ts";
import { EncoderProcess, videoEncoderArgs } from "../src/media/ffmpeg.ts";

const args = parseArgs({ args: Deno.args, options: { rounds: { type: "string", default: "12" } } });
const rounds = Number(args.values.rounds);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))];
const r1 = (n: number) => Math.round(n * 10) / 10;

/** Connect → first decodable video frame (init segment, then a video key frame), ms; null past 5 s. */
async function firstFrame(wsUrl: string, token: string): Promise<number | null> {
  const ws = new WebSocket(wsUrl, ["avatar-media.v0", `bearer.${token}`]);
  ws.binaryType = "arraybuffer";
  const opened = wallNow();
  let init = false;
  const got = await new Promise<number | null>((resolve) => {
    const timer = setTimeout(() => resolve(null), 5000);
    ws.addEventListener("message", (e) => {
      if (typeof e.data === "string") return;
      const seg = readSegment(new Uint8Array(e.data as ArrayBuffer));
      if (!seg) init = true;
      else if (init && seg.track === 1 && seg.key) {
        clearTimeout(timer);
        resolve(wallNow() - opened);
      }
    });
    ws.addEventListener("error", () => {});
  });
  const closed = new Promise((r) => ws.addEventListener("close", r, { once: true }));
  ws.close();
  await closed;
  return got;
}

/** ffmpeg's spawn → first encoded output, cold and spawned ahead (after `aheadMs`), ms. */
async function spawnToFirstOutput(aheadMs: number | null): Promise<number> {
  const format = { width: 512, height: 512, fps: 25 };
  let first = 0;
  const enc = EncoderProcess.spawn("ffmpeg", videoEncoderArgs(format, 28), null);
  if (aheadMs !== null) await sleep(aheadMs);
  const t0 = performance.now();
  const out = new Promise<void>((resolve) => enc.attach(() => (first ||= performance.now(), resolve())));
  enc.write(new Uint8Array(format.width * format.height * 3 / 2).fill(128));
  await out;
  await enc.stop(1000);
  return first - t0;
}

/** Resident memory of a process, MB. */
function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+)/.exec(Deno.readTextFileSync(`/proc/${pid}/status`));
  return m ? Number(m[1]) / 1024 : NaN;
}

if (import.meta.main) {
  const nproc = navigator.hardwareConcurrency;
  const core = nproc - 1;
  const dir = await Deno.makeTempDir({ prefix: "svc-encoder-start-" });
  const tls = await generateEngineTls();
  const caFile = `${dir}/engine-ca.pem`;
  await Deno.writeTextFile(caFile, tls.caPem);
  const engine = startBenchEngine(tls);
  const load = () => Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");
  const loadBefore = load();
  await Deno.mkdir(`${dir}/a`);
  await Deno.mkdir(`${dir}/b`);
  const services = {
    "spares 0": await startServiceProcess(caFile, `${dir}/a`, core, { SVC_RENDER_ENCODER_SPARES: "0" }),
    "spares 1": await startServiceProcess(caFile, `${dir}/b`, core, { SVC_RENDER_ENCODER_SPARES: "1" }),
  };
  const first: Record<string, number[]> = { "spares 0": [], "spares 1": [] };
  const again: Record<string, number[]> = { "spares 0": [], "spares 1": [] };
  try {
    // Each service's first session checks the encoder and learns the stream's configuration.
    for (const svc of Object.values(services)) await endSession(svc, (await createSession(svc, engine)).id);
    for (let r = 0; r < rounds; r++) {
      for (const [name, svc] of Object.entries(services)) {
        const s = await createSession(svc, engine);
        await sleep(300); // the spare taken by the previous round is replaced
        const a = await firstFrame(s.wsUrl, s.token);
        if (a !== null) first[name].push(a);
        await sleep(500);
        const b = await firstFrame(s.wsUrl, s.token);
        if (b !== null) again[name].push(b);
        await endSession(svc, s.id);
      }
    }
    const cold: number[] = [], ahead: number[] = [];
    for (let i = 0; i < 6; i++) {
      cold.push(await spawnToFirstOutput(null));
      ahead.push(await spawnToFirstOutput(300));
    }
    const spare = EncoderProcess.spawn(
      "ffmpeg",
      videoEncoderArgs({ width: 512, height: 512, fps: 25 }, 28),
      null,
    );
    await sleep(500);
    const spareRss = rssMb(spare.pid);
    await spare.stop(0);
    console.log(
      `connect → first decodable frame, ms (${rounds} sessions each, alternating; service pinned to core ${core}):`,
    );
    console.log("| | first connect p50 / p95 | reconnect after the last client left p50 / p95 |");
    console.log("|---|---|---|");
    for (const name of Object.keys(services)) {
      console.log(
        `| ${name} | ${r1(pct(first[name], 0.5))} / ${r1(pct(first[name], 0.95))} (${first[name].length}) | ${
          r1(pct(again[name], 0.5))
        } / ${r1(pct(again[name], 0.95))} (${again[name].length}) |`,
      );
    }
    console.log(
      `\nffmpeg spawn → first encoded frame (512×512, 6 each, alternating): cold p50 ${
        r1(pct(cold, 0.5))
      } ms, spawned ahead p50 ${r1(pct(ahead, 0.5))} ms; an idle spare's RSS ${r1(spareRss)} MB`,
    );
    console.log(
      `load average before ${loadBefore}, after ${load()}; command: deno run -A bench/encoder_start.ts --rounds ${rounds}`,
    );
  } finally {
    for (const svc of Object.values(services)) {
      await svc.child.stdin.close().catch(() => {});
      await svc.child.status;
    }
    await engine.close();
    await Deno.remove(dir, { recursive: true });
  }
}
