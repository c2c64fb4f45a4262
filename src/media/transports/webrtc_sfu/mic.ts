/**
 * The user's microphone on the worker side of the SFU transport: a UDP socket that receives the Opus RTP
 * a Janus VideoRoom forwards (`rtp_forward`) for the session's publisher, decoded in-process to PCM16 mono
 * at the engine's input rate, 20 ms per packet as the browser sends them.
 *
 * Decoding uses `opus-decoder` (npm, libopus compiled to WebAssembly; well kept, no native build) rather
 * than an ffmpeg process per session: no process to babysit, and no "connection timed out" exit when the
 * user is silent and the browser stops sending.
 *
 * @module
 */
import dgram from "node:dgram";
import { OpusDecoder, type OpusDecoderSampleRate } from "opus-decoder";
import { LinearResampler } from "../../resample.ts";
import { parseRtp } from "./rtp.ts";

/** Sample rates libopus decodes to directly. */
const OPUS_RATES = [8000, 12000, 16000, 24000, 48000];

/** Counters of a microphone receiver. */
export interface MicStats {
  packets: number;
  /** Packets that were not RTP or could not be decoded. */
  invalid: number;
  /** PCM bytes handed to the engine. */
  bytes: number;
}

/** Receives a session's forwarded microphone RTP and hands PCM16 to `onPcm`. */
export class MicReceiver {
  readonly #socket: dgram.Socket;
  readonly #rate: number;
  readonly #onPcm: (pcm: Uint8Array) => void;
  #decoder: OpusDecoder<OpusDecoderSampleRate> | null = null;
  #resampler: LinearResampler | null = null;
  #ssrc: number | null = null;
  /** Counts decoder restarts: a restart overtaken by a newer one frees its decoder. */
  #generation = 0;
  #closed = false;
  readonly stats: MicStats = { packets: 0, invalid: 0, bytes: 0 };

  private constructor(socket: dgram.Socket, rate: number, onPcm: (pcm: Uint8Array) => void) {
    this.#socket = socket;
    this.#rate = rate;
    this.#onPcm = onPcm;
    socket.on("message", (msg: Uint8Array) => this.#onPacket(msg));
    socket.on("error", () => {});
  }

  /**
   * Binds a UDP port on `host` (port chosen by the system) for PCM16 at `rate` Hz. Resolves once bound and
   * the decoder is ready.
   */
  static async open(host: string, rate: number, onPcm: (pcm: Uint8Array) => void): Promise<MicReceiver> {
    const socket = dgram.createSocket(host.includes(":") ? "udp6" : "udp4");
    await new Promise<void>((resolve, reject) => {
      socket.once("error", reject);
      socket.bind(0, host, () => {
        socket.off("error", reject);
        resolve();
      });
    });
    const mic = new MicReceiver(socket, rate, onPcm);
    try {
      await mic.#reset();
    } catch (err) {
      await mic.close();
      throw err;
    }
    return mic;
  }

  /** The UDP port Janus should forward to. */
  get port(): number {
    return this.#socket.address().port;
  }

  /**
   * A fresh decoder (its WebAssembly instance starts asynchronously): the current one decodes until it is
   * ready, then is freed. (Reset in place — `OpusDecoder.reset()` frees it at once and starts again
   * asynchronously — the packets that came meanwhile were decoded by a freed decoder: `libopus -4
   * OPUS_INVALID_PACKET` on the console and the new publisher's first packet lost.)
   */
  async #reset(): Promise<void> {
    const generation = ++this.#generation;
    const direct = OPUS_RATES.includes(this.#rate);
    const decoder = new OpusDecoder({
      channels: 1,
      sampleRate: (direct ? this.#rate : 48000) as OpusDecoderSampleRate,
    });
    await decoder.ready;
    if (this.#closed || generation !== this.#generation) {
      decoder.free();
      return;
    }
    this.#decoder?.free();
    this.#decoder = decoder;
    this.#resampler = direct ? null : new LinearResampler(48000, this.#rate);
  }

  #onPacket(msg: Uint8Array): void {
    if (this.#closed || !this.#decoder) return;
    const rtp = parseRtp(msg);
    if (!rtp || rtp.payload.length === 0) {
      this.stats.invalid++;
      return;
    }
    this.stats.packets++;
    if (this.#ssrc !== rtp.ssrc) {
      // A new publisher (a reconnect, or a newer client took the microphone): fresh decoder state.
      if (this.#ssrc !== null) void this.#reset().catch(() => {});
      this.#ssrc = rtp.ssrc;
    }
    let decoded;
    try {
      decoded = this.#decoder.decodeFrame(rtp.payload);
    } catch {
      this.stats.invalid++;
      return;
    }
    const f = decoded.channelData[0];
    if (!f || decoded.samplesDecoded === 0) return;
    let pcm: Int16Array = new Int16Array(decoded.samplesDecoded);
    for (let i = 0; i < pcm.length; i++) {
      const s = Math.max(-1, Math.min(1, f[i]));
      pcm[i] = s < 0 ? s * 32768 : s * 32767;
    }
    if (this.#resampler) pcm = this.#resampler.process(pcm);
    if (!pcm.length) return;
    const bytes = new Uint8Array(pcm.buffer, pcm.byteOffset, pcm.byteLength);
    this.stats.bytes += bytes.length;
    this.#onPcm(bytes);
  }

  /** Closes the socket and frees the decoder. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#decoder?.free();
    this.#decoder = null;
    await new Promise<void>((resolve) => {
      try {
        this.#socket.close(() => resolve());
      } catch {
        resolve();
      }
    });
  }
}
