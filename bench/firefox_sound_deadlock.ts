/**
 * Firefox's sound deadlock, shown without the service or the player (docs/media-plane.md, "In Firefox"): rounds
 * of pages in Debian's Firefox ESR, `--pages` at a time, each an `AudioContext` playing an oscillator for
 * `--life` ms and then closed, reading its output latency every 10 ms as `--read` says — `none`, `latency`
 * (`outputLatency`) or `timestamp` (`getOutputTimestamp()`) —, from its start or, `--from running`, once it
 * has run `--after` ms (default 0); with `--at quiet`, not on a timer but just after an audio callback (an
 * AudioWorklet posts the wall time of each callback's first render quantum; the page reads 2 ms after it, at
 * least 4 ms before the next — tried as a way round the deadlock, and not one: docs). Each page says in its
 * console which read it is about to make; a page that has not ended its round in 30 s counts as hung, with
 * the last read it began, and the run stops there (Firefox's sound then stands still for every page). Each
 * round says how long each context played, how many reads it made and its longest (the page's main thread
 * blocked). Firefox plays to a PulseAudio null sink (`startSoundServer`), or with `--mock` to its mock device.
 *
 * `deno run -A bench/firefox_sound_deadlock.ts --read latency --from running --rounds 40 --pages 3`
 *
 * @module
 */
import { parseArgs } from "node:util";
import type { BrowserContext, Page } from "puppeteer-core";
import { closeFirefox, launchFirefox, startSoundServer } from "../testing/firefox.ts";

const HUNG_AFTER_MS = 30_000;

/** What a page did in its round. */
interface PageRound {
  /** Played (ms of context time), or null when it never ran. */
  played: number | null;
  reads: number;
  /** The longest read (ms: the page's main thread blocked). */
  longest: number;
  /** With `--at quiet`: the least time between two sound callbacks (ms). */
  gap: number | null;
}

/** A page's round, or null if it has not ended in {@link HUNG_AFTER_MS} (its timer cleared either way). */
async function within(round: Promise<PageRound>): Promise<PageRound | null> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      round,
      new Promise<null>((r) => timer = setTimeout(() => r(null), HUNG_AFTER_MS)),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** The page's script: one context, its oscillator, the reads, then closed. */
function pageScript(
  read: string,
  at: string,
  from: string,
  afterMs: number,
  lifeMs: number,
  frequency: number,
): string {
  return `(async () => {
    const ctx = new AudioContext();
    const osc = new OscillatorNode(ctx, { frequency: ${frequency} });
    osc.connect(ctx.destination);
    osc.start();
    let reads = 0;
    let sink = 0;
    let longest = 0;
    let runningSince = null;
    const quiet = ${JSON.stringify(at)} === "quiet";
    /** Wall time of the latest sound callback's start (the worklet's first quantum of it), the gaps before. */
    let callbackAt = null;
    let gaps = [];
    if (quiet) {
      const src = "class Q extends AudioWorkletProcessor { constructor() { super(); this.last = 0; } " +
        "process() { const now = Date.now(); if (now - this.last >= 2) this.port.postMessage(now); " +
        "this.last = now; return true; } } registerProcessor('q', Q);";
      const url = URL.createObjectURL(new Blob([src], { type: "text/javascript" }));
      await ctx.audioWorklet.addModule(url);
      const q = new AudioWorkletNode(ctx, "q", { numberOfInputs: 0, numberOfOutputs: 1 });
      q.connect(ctx.destination);
      q.port.onmessage = (e) => {
        if (callbackAt !== null) gaps = [...gaps.slice(-7), e.data - callbackAt];
        callbackAt = e.data;
        step();
      };
    }
    const step = () => {
      if (${JSON.stringify(read)} === "none") return;
      if (quiet) {
        if (callbackAt === null || gaps.length < 4) return;
        const gap = Math.min(...gaps);
        const wait = Math.min(callbackAt + 2, Date.now() + 3); // (never more than 3 ms of spinning)
        while (Date.now() < wait) { /* the 2 ms after the callback's start */ }
        if (Date.now() > callbackAt + gap - 4) return;
      }
      if (${JSON.stringify(from)} === "running") {
        if (ctx.state !== "running") return;
        runningSince ??= performance.now();
        if (performance.now() - runningSince < ${afterMs}) return;
      }
      reads++;
      console.log("read " + reads);
      const t = performance.now();
      sink += ${read === "latency" ? "ctx.outputLatency" : "ctx.getOutputTimestamp().contextTime ?? 0"};
      longest = Math.max(longest, performance.now() - t);
    };
    const timer = setInterval(() => quiet || step(), 10);
    await new Promise((r) => setTimeout(r, ${lifeMs}));
    clearInterval(timer);
    const played = ctx.state === "running" ? ctx.currentTime * 1000 : null;
    await ctx.close();
    return { played, reads, longest, gap: gaps.length ? Math.min(...gaps) : null };
  })()`;
}

if (import.meta.main) {
  const { values: args } = parseArgs({
    args: Deno.args,
    options: {
      read: { type: "string", default: "latency" },
      from: { type: "string", default: "start" },
      at: { type: "string", default: "any" },
      rounds: { type: "string", default: "40" },
      pages: { type: "string", default: "3" },
      life: { type: "string", default: "1500" },
      after: { type: "string", default: "0" },
      mock: { type: "boolean", default: false },
    },
  });
  const read = args.read!;
  if (!["none", "latency", "timestamp"].includes(read)) {
    throw new Error(`--read: none, latency or timestamp, not ${read}`);
  }
  if (args.at !== "any" && args.at !== "quiet") throw new Error(`--at: any or quiet, not ${args.at}`);
  if (args.from !== "start" && args.from !== "running") {
    throw new Error(`--from: start or running, not ${args.from}`);
  }
  const [rounds, pages, life, after] = [args.rounds, args.pages, args.life, args.after].map(Number);
  if (!Number.isInteger(after) || after < 0) throw new Error(`--after: ms, 0 or more, not ${args.after}`);
  for (const [name, v] of [["--rounds", rounds], ["--pages", pages], ["--life", life]] as const) {
    if (!Number.isInteger(v) || v < 1) throw new Error(`${name}: a whole number, 1 or more, not ${v}`);
  }
  const sound = args.mock ? null : await startSoundServer();
  if (!args.mock && !sound) throw new Error("no PulseAudio: apt-get install -y pulseaudio (or --mock)");
  const browser = await launchFirefox({ autoplay: "allowed", ...(sound ? { sound } : {}) });
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => new Response("<!doctype html><title>sound</title>", { headers: { "content-type": "text/html" } }),
  );
  const url = `http://127.0.0.1:${server.addr.port}/`;
  const command = `deno run -A bench/firefox_sound_deadlock.ts ${Deno.args.join(" ")}`.trim();
  console.log(`${command} (${args.mock ? "mock device" : "PulseAudio null sink"})`);
  let hungIn: number | null = null;
  let played = 0;
  try {
    for (let r = 1; r <= rounds && hungIn === null; r++) {
      const open: { context: BrowserContext; page: Page; seen: { lastRead: number } }[] = [];
      for (let i = 0; i < pages; i++) {
        const context = await browser.createBrowserContext();
        const page = await context.newPage();
        await page.goto(url);
        const seen = { lastRead: 0 };
        page.on("console", (m) => {
          const n = /^read (\d+)$/.exec(m.text());
          if (n) seen.lastRead = Number(n[1]);
        });
        open.push({ context, page, seen });
      }
      const results = await Promise.all(
        open.map(({ page }, i) =>
          within(
            page.evaluate(pageScript(read, args.at!, args.from!, after, life, 220 + 50 * i)) as Promise<
              PageRound
            >,
          )
        ),
      );
      const hung = results.flatMap((x, i) =>
        x ? [] : [`page ${i + 1} (began read ${open[i].seen.lastRead})`]
      );
      played += results.filter((x) => x?.played != null).length;
      console.log(
        `round ${r}: ${
          results.map((x) =>
            x
              ? `played ${
                x.played === null ? "–" : Math.round(x.played)
              } ms, ${x.reads} reads (longest ${x.longest} ms${
                x.gap == null ? "" : `, callbacks ${x.gap} ms apart`
              })`
              : "HUNG"
          )
            .join("; ")
        }`,
      );
      if (hung.length) {
        hungIn = r;
        console.log(`hung in round ${r}: ${hung.join(", ")}`);
      } else {
        await Promise.all(open.map(({ context }) => context.close()));
      }
    }
  } finally {
    await closeFirefox(browser); // (a deadlocked Firefox is killed after 10 s)
    await sound?.stop();
    await server.shutdown();
  }
  console.log(
    hungIn === null
      ? `no hang in ${rounds} rounds of ${pages} (${played} pages ran their context)`
      : `hung in round ${hungIn} of at most ${rounds}`,
  );
}
