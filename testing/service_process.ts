/**
 * Runs `main.ts` as a real child process on a KV file, for tests that kill or signal a service process.
 *
 * @module
 */
import { TEST_TOKEN_SECRET } from "./harness.ts";

/** A service child process. */
export interface ServiceProcess {
  /** Its HTTP base URL (from its "listening" log line). */
  url: string;
  child: Deno.ChildProcess;
  /** Sends a signal (once). */
  kill(signal: Deno.Signal): void;
  /** Waits for the exit (killing the process at `timeoutMs`, default 60 s); returns the status and log. */
  exited(timeoutMs?: number): Promise<{ status: Deno.CommandStatus; log: string }>;
}

/** Options of {@link startServiceProcess}. */
export interface ServiceProcessOptions {
  /** Permission flags (default `-A`). */
  permissions?: string[];
  /** More Deno flags before `main.ts` (e.g. the start task's `--v8-flags=…`). */
  flags?: string[];
  startTimeoutMs?: number;
  /** Another checkout whose `main.ts` runs. */
  root?: string;
}

/**
 * Starts `main.ts` with `env` (plus a fixed token secret, no reference engine, port 0), with every
 * permission or the ones given (e.g. the Deno Deploy-like sandbox of an API process); `root` runs another
 * checkout's `main.ts` (default: this one).
 */
export async function startServiceProcess(
  env: Record<string, string>,
  options: ServiceProcessOptions = {},
): Promise<ServiceProcess> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...(options.permissions ?? ["-A"]), ...(options.flags ?? []), "main.ts"],
    cwd: options.root ?? new URL("..", import.meta.url),
    env: { PORT: "0", SVC_REFERENCE_ENGINE: "false", SVC_TOKEN_SECRET: TEST_TOKEN_SECRET, ...env },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let log = "";
  // stderr (a start-up error) goes into the same log.
  const errText = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  const errDone = (async () => {
    for (;;) {
      const { value, done } = await errText.read();
      if (done) return;
      log += value;
    }
  })();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let url = "";
  // A process that neither listens nor exits within the deadline is killed (its read then ends).
  const startTimer = setTimeout(() => {
    try {
      child.kill("SIGKILL");
    } catch { /* exited already */ }
  }, options.startTimeoutMs ?? 60_000);
  try {
    for (let i = 0; i < 500 && !url; i++) {
      const { value, done } = await reader.read();
      if (done) break;
      log += value;
      url = /"msg":"listening","url":"(http:\/\/[^"]+)"/.exec(log)?.[1] ?? "";
    }
  } finally {
    clearTimeout(startTimer);
  }
  const rest = (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      log += value;
    }
  })();
  let signalled = false;
  const proc: ServiceProcess = {
    url,
    child,
    kill(signal) {
      if (signalled) return;
      signalled = true;
      child.kill(signal);
    },
    async exited(timeoutMs = 60_000) {
      // A process still running at the deadline (a stuck shutdown) is killed, so no test waits forever.
      const timer = setTimeout(() => {
        try {
          child.kill("SIGKILL");
        } catch { /* exited already */ }
      }, timeoutMs);
      const status = await child.status.finally(() => clearTimeout(timer));
      await rest;
      await errDone;
      return { status, log };
    },
  };
  if (!url) {
    proc.kill("SIGKILL");
    await proc.exited();
    throw new Error(`the service process did not start:\n${log}`);
  }
  return proc;
}
