/**
 * ffmpeg, the encoder: the start-up check, the two encoder command lines (video: raw yuv420p frames →
 * H.264 in FLV; audio: PCM16 at 48 kHz → Opus in Ogg), and a child-process wrapper that streams bytes in
 * and out and never outlives the session.
 *
 * Why two processes per session: each has one input and one output, so ffmpeg reads, encodes and writes
 * every frame as it arrives (one ffmpeg with two inputs polls them and interleaves its outputs, which
 * costs latency), and neither stream can stall the other. Both read their input from stdin: if the
 * service dies, they see end-of-file and exit, so they cannot be orphaned.
 *
 * @module
 */
import { StartupError } from "../config.ts";
import type { VideoFormat } from "./renderer.ts";

/** Raised when ffmpeg is missing or unusable at start-up; the message is one line. */
export class FfmpegUnavailableError extends StartupError {
  override name = "FfmpegUnavailableError";
}

/** Encoders the media plane needs from ffmpeg. */
export const REQUIRED_ENCODERS = ["libx264", "libopus"] as const;

/**
 * Checks that `path` runs ffmpeg with the required encoders; resolves with its version line or throws
 * {@link FfmpegUnavailableError} with a one-line explanation.
 */
export async function checkFfmpeg(path: string): Promise<string> {
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command(path, {
      args: ["-hide_banner", "-nostdin", "-encoders"],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
  } catch (err) {
    const why = err instanceof Deno.errors.NotFound ? "not found" : "could not be started";
    throw new FfmpegUnavailableError(
      `media plane: ffmpeg ${why} (SVC_FFMPEG_PATH=${path}); install it (Debian: apt-get install ffmpeg), set SVC_FFMPEG_PATH, or run without media with SVC_MEDIA_ENABLED=false`,
    );
  }
  const text = new TextDecoder().decode(out.stdout);
  if (!out.success) {
    throw new FfmpegUnavailableError(`media plane: ${path} -encoders failed with exit code ${out.code}`);
  }
  const missing = REQUIRED_ENCODERS.filter((e) => !new RegExp(`^\\s*[A-Z.]{6}\\s+${e}\\s`, "m").test(text));
  if (missing.length) {
    throw new FfmpegUnavailableError(
      `media plane: ffmpeg lacks the ${missing.join(" and ")} encoder(s); install Debian's ffmpeg package`,
    );
  }
  const version = await new Deno.Command(path, {
    args: ["-hide_banner", "-nostdin", "-version"],
    stdout: "piped",
    stderr: "null",
  })
    .output();
  return new TextDecoder().decode(version.stdout).split("\n")[0] ?? "ffmpeg";
}

/** Leading arguments of both encoders: errors only, and no probing delay before the first input bytes. */
const QUIET_LIVE_INPUT = [
  "-hide_banner",
  "-loglevel",
  "error",
  "-nostats",
  "-probesize",
  "32",
  "-analyzeduration",
  "0",
];

/**
 * Video encoder: yuv420p frames on stdin → H.264 (x264 ultrafast, zero latency, one thread, keyframe
 * every `gop` frames — by default `fps`, one a second —, BT.709) in FLV on stdout, each access unit
 * flushed as soon as it is encoded.
 */
export function videoEncoderArgs(format: VideoFormat, crf: number, gop: number = format.fps): string[] {
  return [
    ...QUIET_LIVE_INPUT,
    "-f",
    "rawvideo",
    "-pix_fmt",
    "yuv420p",
    "-s",
    `${format.width}x${format.height}`,
    "-framerate",
    String(format.fps),
    "-i",
    "pipe:0",
    "-an",
    "-c:v",
    "libx264",
    "-preset",
    "ultrafast",
    "-tune",
    "zerolatency",
    "-threads",
    "1",
    "-crf",
    String(crf),
    "-g",
    String(gop),
    "-keyint_min",
    String(gop),
    "-sc_threshold",
    "0",
    "-bf",
    "0",
    "-colorspace",
    "bt709",
    "-color_primaries",
    "bt709",
    "-color_trc",
    "bt709",
    "-color_range",
    "tv",
    "-fps_mode",
    "passthrough",
    "-flush_packets",
    "1",
    "-flvflags",
    "no_duration_filesize",
    "-f",
    "flv",
    "pipe:1",
  ];
}

/** Sample rate of the audio encoder's input (PCM16 mono). */
export const AUDIO_RATE = 48_000;
/**
 * Samples ffmpeg's raw PCM reader takes per packet: writes of exactly this size are encoded at once
 * (a shorter write waits inside ffmpeg for the rest of its packet).
 */
export const AUDIO_BLOCK = 1024;

/**
 * Audio encoder: PCM16 mono at 48 kHz on stdin → Opus (low-delay mode, 10 ms frames) in Ogg on stdout,
 * one packet per page, each flushed at once.
 */
export function audioEncoderArgs(bitrate: number): string[] {
  return [
    ...QUIET_LIVE_INPUT,
    "-f",
    "s16le",
    "-ar",
    String(AUDIO_RATE),
    "-ac",
    "1",
    "-i",
    "pipe:0",
    "-vn",
    "-c:a",
    "libopus",
    "-application",
    "lowdelay",
    "-frame_duration",
    "10",
    "-b:a",
    String(bitrate),
    "-page_duration",
    "10000",
    "-flush_packets",
    "1",
    "-f",
    "ogg",
    "pipe:1",
  ];
}

/**
 * Capacity asked for an encoder's stdin pipe, bytes (Linux allows unprivileged processes up to
 * `/proc/sys/fs/pipe-max-size`, 1 MiB by default). A 512×512 yuv420p frame is 393 KB: through the default
 * 64 KB pipe it goes in six writes, each continued in a later turn of the worker's event loop, so a busy loop
 * (a garbage collection's marking) held frames back 40-70 ms on their way to the encoder; with room for whole
 * frames a frame is one write, made in the turn that renders it.
 */
export const ENCODER_PIPE_BYTES = 1 << 20;

/**
 * How an encoder gets its larger stdin pipe: Deno cannot resize a pipe (`fcntl(F_SETPIPE_SZ)`), so the
 * encoder is started through `perl` (part of every Debian and Ubuntu system), which resizes its stdin (1031
 * is `F_SETPIPE_SZ` on Linux; half the size is tried if the system allows less; elsewhere the call fails and
 * changes nothing) and then becomes the encoder (`exec` of the argument list, no shell; same process id).
 * Without perl, encoders run with the default pipe.
 */
const PIPE_SIZER =
  `fcntl(STDIN, 1031, ${ENCODER_PIPE_BYTES}) or fcntl(STDIN, 1031, ${ENCODER_PIPE_BYTES / 2}); ` +
  `exec { $ARGV[0] } @ARGV or die "cannot run $ARGV[0]: $!\\n"`;
/** Whether encoders are started through the pipe sizer (false once perl was not found). */
export const pipeSizer = { program: "perl", available: true };

/** Bytes of an encoder's output read at a time (into one buffer, reused). */
const READ_BUFFER_BYTES = 64 * 1024;

/** A running encoder process. */
export class EncoderProcess {
  readonly pid: number;
  /** Resolves when the process has exited and its pipes are drained. */
  readonly exited: Promise<Deno.CommandStatus>;
  readonly #child: Deno.ChildProcess;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  #pendingWrites = 0;
  #inputClosed = false;
  #stderr = "";
  #writeFailed = false;
  /** Where output goes: the owner's handler, or (a spare not taken yet) a queue for it. */
  #onData: ((chunk: Uint8Array) => void) | null = null;
  readonly #early: Uint8Array[] = [];

  private constructor(child: Deno.ChildProcess, onData: ((chunk: Uint8Array) => void) | null) {
    this.#child = child;
    this.#onData = onData;
    this.pid = child.pid;
    const writer = child.stdin.getWriter();
    this.#writer = writer;
    writer.closed.catch(() => {});
    const pump = (async () => {
      // One read buffer for the process's life (a bring-your-own-buffer read hands it back each time):
      // the default reader allocates 64 KB per read, 25 times a second for a few hundred bytes of video.
      const reader = child.stdout.getReader({ mode: "byob" });
      let buffer = new ArrayBuffer(READ_BUFFER_BYTES);
      try {
        for (;;) {
          const { value, done } = await reader.read(new Uint8Array(buffer));
          if (done || !value) break;
          buffer = value.buffer as ArrayBuffer;
          if (this.#onData) this.#onData(value);
          else this.#early.push(value.slice());
        }
      } catch {
        /* the process died: its status tells */
      } finally {
        reader.releaseLock();
      }
    })();
    const errPump = (async () => {
      const dec = new TextDecoder();
      try {
        for await (const chunk of child.stderr) {
          this.#stderr = (this.#stderr + dec.decode(chunk, { stream: true })).slice(-2000);
        }
      } catch { /* ignore */ }
    })();
    this.exited = (async () => {
      const status = await child.status;
      this.#exitedNow = true;
      await Promise.allSettled([pump, errPump]);
      if (!this.#inputClosed) {
        this.#inputClosed = true;
        await writer.abort().catch(() => {});
      }
      return status;
    })();
  }

  /**
   * Starts `path args`; throws what `Deno.Command.spawn` throws. Started through the pipe sizer, an encoder
   * that cannot be run (its path missing: the media plane checks it at start-up) does not throw here but exits
   * at once (perl's "cannot run …" on stderr), which its owner handles as any exit. The encoder never sees a
   * credential, so it runs without the service's scrub of freed memory (`GLIBC_TUNABLES`, docs/api.md):
   * glibc's defaults, and none of the scrub's cost per frame. Each chunk given to `onData` is valid only
   * during the call (the next read reuses its buffer): copy what must be kept.
   */
  static spawn(path: string, args: string[], onData: ((chunk: Uint8Array) => void) | null): EncoderProcess {
    const command = (program: string, programArgs: string[]) =>
      new Deno.Command(program, {
        args: programArgs,
        env: { GLIBC_TUNABLES: "" },
        stdin: "piped",
        stdout: "piped",
        stderr: "piped",
      });
    let child: Deno.ChildProcess | undefined;
    if (pipeSizer.available) {
      try {
        child = command(pipeSizer.program, ["-e", PIPE_SIZER, path, ...args]).spawn();
      } catch (err) {
        if (!(err instanceof Deno.errors.NotFound)) throw err;
        pipeSizer.available = false; // no perl here: encoders get the default pipe
      }
    }
    child ??= command(path, args).spawn();
    return new EncoderProcess(child, onData);
  }

  /**
   * Gives the output to `onData` (a spare started with none: `encoder_spares.ts`); what came before is
   * handed over first.
   */
  attach(onData: (chunk: Uint8Array) => void): void {
    this.#onData = onData;
    for (const chunk of this.#early.splice(0)) onData(chunk);
  }

  /** Whether the process has exited (its status is known). */
  get hasExited(): boolean {
    return this.#exitedNow;
  }

  #exitedNow = false;

  /** Writes queued and not yet accepted by the pipe. */
  get pendingWrites(): number {
    return this.#pendingWrites;
  }

  /** Whether a write failed (the process is gone or closed its input). */
  get broken(): boolean {
    return this.#writeFailed;
  }

  /** The last lines ffmpeg wrote to stderr (for logs). */
  get stderrTail(): string {
    return this.#stderr.trim().split("\n").slice(-3).join(" | ").slice(0, 300);
  }

  /**
   * Queues bytes for the encoder's stdin; never throws (a failure marks the encoder broken). `done` is called
   * once the bytes are no longer needed (written, or the write failed): the caller may then reuse them.
   */
  write(bytes: Uint8Array, done?: () => void): void {
    if (this.#inputClosed) return done?.();
    this.#pendingWrites++;
    this.#writer.write(bytes).then(
      () => {
        this.#pendingWrites--;
        done?.();
      },
      () => {
        this.#pendingWrites--;
        this.#writeFailed = true;
        done?.();
      },
    );
  }

  /** Closes stdin (ffmpeg then flushes and exits). */
  async closeInput(): Promise<void> {
    if (this.#inputClosed) return;
    this.#inputClosed = true;
    await this.#writer.close().catch(() => {});
  }

  /** Sends a signal (ignored when the process is already gone). */
  kill(signal: Deno.Signal = "SIGKILL"): void {
    try {
      this.#child.kill(signal);
    } catch { /* already exited */ }
  }

  /**
   * Stops the process: closes its input and waits up to `graceMs` for it to exit, then kills it.
   * Resolves true when it exited by itself.
   */
  async stop(graceMs: number): Promise<boolean> {
    void this.closeInput();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const clean = await Promise.race([
      this.exited.then(() => true),
      new Promise<false>((r) => timer = setTimeout(() => r(false), Math.max(0, graceMs))),
    ]);
    clearTimeout(timer);
    if (!clean) {
      this.kill("SIGKILL");
      await this.exited;
    }
    return clean;
  }
}
