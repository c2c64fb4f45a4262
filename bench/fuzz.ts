/**
 * `deno task fuzz`: the hostile-client fuzz campaign (bench/fuzz_campaign.ts) against a real service on
 * loopback (KV file, reference engine, media plane, demo page), bounded in count and time.
 *
 * Run: `deno task fuzz [--count 24000] [--websockets 400] [--seconds 600] [--concurrency 16] [--seed 1]`
 *
 * Prints the report and writes `bench/results/fuzz-<time>.json` (git-ignored). Exits 1 when any must-be-zero
 * figure (unexpected 5xx, malformed error bodies, bad success headers, transport errors, unexpected WebSocket
 * closes, error log lines, methods no route serves answered otherwise than 405/404) is not zero.
 * `server_refusals` counts the bare 400s Deno's HTTP server itself gives a request with a body asking for a
 * protocol upgrade, before the service sees it (see docs/api.md#errors).
 *
 * @module
 */
import { parseArgs } from "node:util";
import { runFuzz, startFuzzTarget } from "./fuzz_campaign.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    count: { type: "string", default: "24000" },
    websockets: { type: "string", default: "400" },
    seconds: { type: "string", default: "600" },
    concurrency: { type: "string", default: "16" },
    seed: { type: "string", default: "1" },
  },
});
const options = {
  count: Number(values.count),
  websockets: Number(values.websockets),
  seconds: Number(values.seconds),
  concurrency: Number(values.concurrency),
  seed: Number(values.seed),
};
const target = await startFuzzTarget();
let failed = true;
try {
  const report = await runFuzz(target, options);
  const load = await Deno.readTextFile("/proc/loadavg").then(
    (s) => s.split(" ").slice(0, 3).join(" "),
    () => "?",
  );
  const result = {
    ...report,
    options,
    deno: Deno.version.deno,
    load_average: load,
    at: new Date().toISOString(),
  };
  console.log(JSON.stringify(result, null, 2));
  await Deno.mkdir(new URL("./results/", import.meta.url), { recursive: true });
  const file = new URL(`./results/fuzz-${result.at.replace(/[:.]/g, "-")}.json`, import.meta.url);
  await Deno.writeTextFile(file, JSON.stringify(result, null, 2) + "\n");
  failed = report.unexpected_five_xx + report.malformed_error_bodies + report.bad_success_headers +
      report.transport_errors + report.websockets.unexpected + report.error_log_lines +
      report.bad_method_answers > 0;
} finally {
  await target.close();
}
if (failed) Deno.exit(1);
