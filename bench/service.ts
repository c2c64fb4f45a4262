/**
 * The service under test for `deno task bench`, run as its own process (so the bench can pin it and
 * its ffmpeg children to one core with `taskset` and measure their CPU and memory apart from the bench's
 * clients). Mints an API key in its in-memory KV and prints one JSON line `{url, api_key, pid}`; stops on
 * SIGTERM or when its stdin closes.
 *
 * Environment: as the service (`src/config.ts`); the bench sets `SVC_ENGINE_CA_FILE` to its engine's CA.
 * `--stamp` renders with {@link stampingReferenceRenderer} (the wall clock in each frame, for glass-to-glass
 * latency).
 *
 * @module
 */
import { loadConfigFromEnv } from "../src/config.ts";
import { createApiKey } from "../src/kv/api_keys.ts";
import { createLogger } from "../src/log.ts";
import { compose } from "../src/app/compose.ts";
import { workerOverrides } from "../src/app/worker_side.ts";
import { type FrameTrace, stampingReferenceRenderer } from "./stamp.ts";

if (import.meta.main) {
  const config = loadConfigFromEnv();
  // Diagnosis: `BENCH_FRAME_TRACE=file` writes, per frame rendered, what the service knew of it (JSON lines
  // `[session seed, frame index, wall ms, aa weight, top viseme, audio RMS per 10 ms]`, see `FrameTrace`).
  const traceFile = Deno.env.get("BENCH_FRAME_TRACE");
  let traced: string[] = [];
  const trace = traceFile
    ? (seed: number, t: FrameTrace) => {
      traced.push(JSON.stringify([seed, ...t]));
      if (traced.length >= 250) flushTrace();
    }
    : undefined;
  const flushTrace = () => {
    if (!traceFile || !traced.length) return;
    Deno.writeTextFileSync(traceFile, traced.join("\n") + "\n", { append: true });
    traced = [];
  };
  const renderer = Deno.args.includes("--stamp")
    ? await stampingReferenceRenderer(config.media, trace)
    : undefined;
  const service = await compose(config, {
    logger: createLogger({ level: "warn" }),
    worker: workerOverrides({ media: { renderer } }),
  });
  const { plaintext } = await createApiKey(service.kv, {
    projectId: "proj_bench",
    name: "bench",
    scopes: ["sessions:read", "sessions:write", "avatars:read", "avatars:write"],
    now: Date.now(),
    createdBy: "bench",
  });
  console.log(JSON.stringify({ url: service.url, api_key: plaintext, pid: Deno.pid }));
  if (Deno.env.get("BENCH_LOOP_WATCH")) {
    // Diagnosis: this process's event-loop stalls over 30 ms (or over BENCH_LOOP_WATCH ms when that is a
    // number above 1), on stderr (a 10 ms interval: ≈ 0.1 % of a core).
    const over = Number(Deno.env.get("BENCH_LOOP_WATCH")) > 1 ? Number(Deno.env.get("BENCH_LOOP_WATCH")) : 30;
    console.error(
      `service time origin ${
        Math.round(performance.timeOrigin)
      } (V8's --trace-gc times count from about here)`,
    );
    let last = performance.now();
    setInterval(() => {
      const now = performance.now();
      if (now - last > 10 + over) {
        console.error(
          `service loop stalled ${Math.round(now - last - 10)} ms at ${
            Math.round(performance.timeOrigin + now)
          }`,
        );
      }
      last = now;
    }, 10);
  }
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await service.close();
    flushTrace();
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGTERM", stop);
  // The bench closes our stdin when it is done (or dies).
  (async () => {
    for await (const _ of Deno.stdin.readable) { /* drain */ }
    await stop();
  })();
}
