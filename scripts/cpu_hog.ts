/**
 * Keeps every core busy, to check that the test suite holds on a loaded machine:
 *
 * ```sh
 * deno run scripts/cpu_hog.ts --seconds 900 &   # one busy thread per core (navigator.hardwareConcurrency)
 * deno task test
 * kill %1
 * ```
 *
 * Flags: `--threads <n>` (default: the number of cores), `--seconds <s>` (default 600; it always stops by
 * itself). Each thread spins on arithmetic at normal priority; nothing is written anywhere.
 *
 * @module
 */
import { parseArgs } from "node:util";

/** The busy loop a worker runs until its deadline. */
const WORKER = `self.onmessage = (e) => {
  const until = e.data;
  let x = 0;
  while (Date.now() < until) {
    for (let i = 0; i < 1e6; i++) x = (x * 1103515245 + 12345) % 2147483648;
  }
  self.postMessage(x);
};`;

/** Starts `threads` busy workers for `seconds`; resolves when they have all stopped. */
export async function hog(threads: number, seconds: number): Promise<void> {
  const until = Date.now() + seconds * 1000;
  const url = `data:text/javascript,${encodeURIComponent(WORKER)}`;
  await Promise.all(
    Array.from({ length: threads }, () =>
      new Promise<void>((resolve) => {
        const worker = new Worker(url, { type: "module" });
        worker.onmessage = () => {
          worker.terminate();
          resolve();
        };
        worker.postMessage(until);
      })),
  );
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: { threads: { type: "string" }, seconds: { type: "string" } },
  });
  const threads = Number(values.threads ?? navigator.hardwareConcurrency);
  const seconds = Number(values.seconds ?? 600);
  if (!Number.isInteger(threads) || threads < 1 || threads > 256) throw new Error("--threads: 1..256");
  if (!(seconds > 0 && seconds <= 24 * 3600)) throw new Error("--seconds: (0, 86400]");
  console.error(`cpu_hog: ${threads} busy thread(s) for ${seconds} s (pid ${Deno.pid})`);
  await hog(threads, seconds);
}
