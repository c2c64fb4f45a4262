/**
 * What the CLI touches outside itself: standard streams, environment, files. Injected so commands can be
 * run in-process; {@link denoIo} is the real one.
 *
 * @module
 */

/** The CLI's view of its process. */
export interface Io {
  /** Writes `text` to standard output as is. */
  stdout(text: string): void;
  /** Writes `text` to standard error as is. */
  stderr(text: string): void;
  /** Whether standard output is a terminal (tables get colour, JSON is indented). */
  readonly stdoutIsTerminal: boolean;
  /** Whether standard error is a terminal (the spinner runs only then). */
  readonly stderrIsTerminal: boolean;
  /** Whether colour is off (`NO_COLOR` is set). */
  readonly noColor: boolean;
  /** An environment variable, or `undefined`. */
  env(name: string): string | undefined;
  /** Reads a text file (`--config`). */
  readTextFile(path: string): Promise<string>;
  /** Writes a file (`avatars preview -o`). */
  writeFile?(path: string, bytes: Uint8Array): Promise<void>;
  /** Reads all of standard input (`--config -`). */
  readStdin(): Promise<string>;
  /** The `fetch` the API client uses (default: the global one). */
  fetch?: (request: Request) => Promise<Response>;
  /** The terminal's size, when standard output is a terminal (`--watch` draws one screen). */
  consoleSize?(): { columns: number; rows: number } | null;
  /** Calls `handler` on Ctrl-C (SIGINT) instead of exiting; returns a function that removes it. */
  onInterrupt?(handler: () => void): () => void;
}

/** Largest `--config` input read from standard input. */
const MAX_STDIN_BYTES = 1024 * 1024;

/** The real process: Deno's streams, environment and file system. */
export function denoIo(): Io {
  const encoder = new TextEncoder();
  const writeAll = (stream: typeof Deno.stdout, text: string) => {
    const bytes = encoder.encode(text);
    let written = 0;
    while (written < bytes.length) written += stream.writeSync(bytes.subarray(written));
  };
  return {
    stdout: (text) => writeAll(Deno.stdout, text),
    stderr: (text) => writeAll(Deno.stderr, text),
    stdoutIsTerminal: Deno.stdout.isTerminal(),
    stderrIsTerminal: Deno.stderr.isTerminal(),
    noColor: Deno.noColor,
    env: (name) => Deno.env.get(name),
    readTextFile: (path) => Deno.readTextFile(path),
    writeFile: (path, bytes) => Deno.writeFile(path, bytes),
    consoleSize() {
      try {
        return Deno.stdout.isTerminal() ? Deno.consoleSize() : null;
      } catch {
        return null;
      }
    },
    onInterrupt(handler) {
      Deno.addSignalListener("SIGINT", handler);
      return () => Deno.removeSignalListener("SIGINT", handler);
    },
    async readStdin() {
      const chunks: Uint8Array[] = [];
      let size = 0;
      for await (const chunk of Deno.stdin.readable) {
        size += chunk.length;
        if (size > MAX_STDIN_BYTES) throw new Error("standard input is larger than 1 MiB");
        chunks.push(chunk);
      }
      const all = new Uint8Array(size);
      let offset = 0;
      for (const c of chunks) {
        all.set(c, offset);
        offset += c.length;
      }
      return new TextDecoder().decode(all);
    },
  };
}
