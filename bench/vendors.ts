/**
 * Vendor audio chunk → fragment latency, for each vendor bridge against its fake, beside the external
 * engine's (the same measure as `bench/main.ts` step 2, in one service process for all four).
 *
 * Each engine speaks bursts of a 300 Hz tone in 20 ms chunks paced exactly in real time, in its own wire
 * format (V0: binary PCM16 24 kHz; vendor1: `response.output_audio.delta`, base64 PCM16 24 kHz; vendor2:
 * `audio_output`, base64 PCM16 24 kHz; vendor3: `audio` events, base64 PCM16 16 kHz), recording when each
 * chunk was sent. A media client records the session's fMP4 stream; its audio is decoded with ffmpeg to find
 * each burst on the timeline, and each chunk is timed from its send to the arrival of the fragment carrying
 * its last sample ("complete") and its first one ("onset"). Target: every bridge within 5 ms of the
 * external engine (p50, complete).
 *
 * Run by `deno task bench` (step 2b), or alone: `deno run -A bench/vendors.ts [--quick]`.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { generateEngineTls } from "../engine/mod.ts";
import { type SentChunk, startBenchEngine, wallNow } from "./engine.ts";
import { readSegment } from "../testing/media.ts";
import { startVendor1Fake } from "../testing/fakes/vendor1_realtime.ts";
import { startVendor2Fake } from "../testing/fakes/vendor2.ts";
import { startVendor3Fake } from "../testing/fakes/vendor3.ts";
import { pcmBase64 } from "../testing/fakes/server.ts";

/** Latency of one engine's chunks, ms. */
export interface ChunkLatency {
  chunks: number;
  unmatched: number;
  complete: { p50: number; p99: number };
  onset: { p50: number; p99: number };
  /** p50 (complete) minus the external engine's. */
  delta_p50_vs_external: number;
}

/** What the vendor bench takes. */
export interface VendorBenchOptions {
  /** TLS material of the engines and fakes (its CA is written to `dir`). */
  tls: { certPem: string; keyPem: string; caPem: string };
  /** A scratch directory (KV, CA file, decoded audio). */
  dir: string;
  /** Fewer bursts. */
  quick?: boolean;
  /** Pin the service (and its ffmpeg children) to this core with `taskset`. */
  core?: number;
}

type Engine = "external_engine" | "vendor1_realtime" | "vendor2" | "vendor3";
const ENGINES: Engine[] = ["external_engine", "vendor1_realtime", "vendor2", "vendor3"];
const BURST_MS = 500;
const GAP_MS = 500;
const CHUNK_MS = 20;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sleepUntil = (t: number) => sleep(Math.max(0, t - wallNow()));
const r1 = (n: number) => Math.round(n * 10) / 10;

function pct(values: number[], p: number): number {
  if (!values.length) return NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

function tone(samples: number, rate: number, offset: number): Int16Array {
  return Int16Array.from(
    { length: samples },
    (_, j) => Math.round(12000 * Math.sin(2 * Math.PI * 300 * (offset + j) / rate)),
  );
}

/** Paces `bursts` of tone chunks in real time through `send`, recording each chunk's send time. */
async function talk(
  bursts: number,
  rate: number,
  turn: { start(b: number): void; chunk(b: number, pcm: Int16Array): void; end(b: number): void },
): Promise<SentChunk[]> {
  const sent: SentChunk[] = [];
  const size = rate * CHUNK_MS / 1000;
  const chunks = BURST_MS / CHUNK_MS;
  let t = wallNow() + 20;
  for (let b = 0; b < bursts; b++) {
    await sleepUntil(t);
    turn.start(b);
    for (let i = 0; i < chunks; i++) {
      await sleepUntil(t + i * CHUNK_MS);
      turn.chunk(b, tone(size, rate, i * size));
      sent.push({ responseId: `r_${b}`, index: i, sentAt: wallNow() });
    }
    t += BURST_MS;
    await sleepUntil(t);
    turn.end(b);
    t += GAP_MS;
  }
  return sent;
}

interface Seg {
  track: number;
  base: number;
  dur: number;
  at: number;
}

/** A media client keeping what it receives. */
class Client {
  readonly ws: WebSocket;
  readonly segs: Seg[] = [];
  readonly bytes: Uint8Array[] = [];
  readonly closed: Promise<void>;

  constructor(url: string, token: string) {
    this.ws = new WebSocket(url, ["avatar-media.v0", `bearer.${token}`]);
    this.ws.binaryType = "arraybuffer";
    this.closed = new Promise((r) => this.ws.addEventListener("close", () => r(), { once: true }));
    this.ws.addEventListener("error", () => {});
    this.ws.addEventListener("message", (e) => {
      if (typeof e.data === "string") return;
      const at = wallNow();
      const buf = new Uint8Array(e.data as ArrayBuffer);
      this.bytes.push(buf);
      const r = readSegment(buf);
      if (r) {
        this.segs.push({
          track: r.track,
          base: r.baseTime,
          dur: r.durations.reduce((a, d) => a + d, 0),
          at,
        });
      }
    });
  }

  async close(): Promise<void> {
    if (this.ws.readyState <= WebSocket.OPEN) this.ws.close();
    await this.closed;
  }
}

async function decodeAudio(bytes: Uint8Array[], dir: string): Promise<Int16Array> {
  const all = new Uint8Array(bytes.reduce((n, b) => n + b.length, 0));
  let o = 0;
  for (const b of bytes) {
    all.set(b, o);
    o += b.length;
  }
  const file = `${dir}/vendor-audio-${crypto.randomUUID()}.mp4`;
  await Deno.writeFile(file, all);
  const out = await new Deno.Command("ffmpeg", {
    args: ["-hide_banner", "-v", "error", "-i", file, "-vn", "-f", "s16le", "-ac", "1", "-ar", "48000", "-"],
    stdout: "piped",
    stderr: "null",
  }).output();
  await Deno.remove(file);
  return new Int16Array(out.stdout.buffer, 0, out.stdout.length >> 1);
}

/** Sample indices where tone bursts start (after ≥ 200 ms of quiet). */
function onsets(pcm: Int16Array): number[] {
  const found: number[] = [];
  let quiet = 0;
  for (let i = 0; i + 480 <= pcm.length; i += 480) {
    let sum = 0;
    for (let j = i; j < i + 480; j++) sum += pcm[j] * pcm[j];
    const loud = Math.sqrt(sum / 480) > 2000;
    if (loud && quiet >= 20) {
      let k = i;
      while (k < i + 480 && Math.abs(pcm[k]) < 1500) k++;
      found.push(k);
    }
    quiet = loud ? 0 : quiet + 1;
  }
  return found;
}

/** Each sent chunk timed to the fragments carrying its last and first samples. */
async function measure(
  client: Client,
  sent: SentChunk[],
  bursts: number,
  dir: string,
): Promise<{ complete: number[]; onset: number[]; unmatched: number }> {
  const audio = client.segs.filter((x) => x.track === 2).sort((a, b) => a.base - b.base);
  const pcm = await decodeAudio(client.bytes, dir);
  const trim = audio.reduce((t, x) => t + x.dur, 0) - pcm.length; // Opus pre-skip trimmed by ffmpeg
  const base0 = audio[0]?.base ?? 0;
  const carrying = (i: number) => {
    const pos = base0 + trim + i;
    return audio.find((x) => pos >= x.base && pos < x.base + x.dur);
  };
  const found = onsets(pcm);
  const complete: number[] = [];
  const onset: number[] = [];
  let unmatched = 0;
  for (let b = 0; b < bursts; b++) {
    for (let k = 0; k < BURST_MS / CHUNK_MS; k++) {
      const chunk = sent.find((x) => x.responseId === `r_${b}` && x.index === k);
      const start = found[b];
      const last = start === undefined ? undefined : carrying(start + (k + 1) * 960 - 1);
      const first = start === undefined ? undefined : carrying(start + k * 960);
      if (!chunk || !last || !first) {
        unmatched++;
        continue;
      }
      complete.push(last.at - chunk.sentAt);
      onset.push(first.at - chunk.sentAt);
    }
  }
  return { complete, onset, unmatched };
}

/** Runs the vendor bench; resolves with each engine's figures. */
export async function benchVendors(o: VendorBenchOptions): Promise<Record<Engine, ChunkLatency>> {
  const bursts = o.quick ? 4 : 10;
  const caFile = `${o.dir}/vendors-ca.pem`;
  await Deno.writeTextFile(caFile, o.tls.caPem);
  const engine = startBenchEngine(o.tls);
  const v1 = startVendor1Fake(o.tls, { secret: "ek_bench" });
  const v2 = startVendor2Fake(o.tls, { token: "bench-token", agents: ["agent_bench"] });
  const v3 = startVendor3Fake(o.tls, { publicAgents: ["agent_bench"], privateAgents: [], apiKey: "-" });
  const env = {
    PORT: "0",
    SVC_KV: `${o.dir}/vendors.kv`,
    SVC_REFERENCE_ENGINE: "false",
    SVC_ENGINE_CA_FILE: caFile,
    SVC_VENDOR1_REALTIME_URL: v1.url,
    SVC_VENDOR2_URL: v2.url,
    SVC_VENDOR3_URL: v3.url,
    SVC_DEMO_PAGE: "false",
    SVC_LOG_LEVEL: "warn",
    SVC_RATE_LIMIT_PER_MINUTE: "1000000",
    SVC_RATE_LIMIT_BURST: "100000",
  };
  const script = new URL("./service.ts", import.meta.url).pathname;
  const cmd = o.core === undefined
    ? [Deno.execPath(), "run", "-A", script]
    : ["taskset", "-c", String(o.core), Deno.execPath(), "run", "-A", script];
  const child = new Deno.Command(cmd[0], { args: cmd.slice(1), env, stdin: "piped", stdout: "piped" })
    .spawn();
  const results = {} as Record<Engine, ChunkLatency>;
  try {
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let info: { url: string; api_key: string } | null = null;
    let text = "";
    while (!info) {
      const { value, done } = await reader.read();
      if (done) throw new Error("the vendor bench's service exited before it was ready");
      text += value;
      for (const line of text.split("\n").slice(0, -1)) {
        if (line.includes('"api_key"')) info = JSON.parse(line);
      }
    }
    reader.releaseLock();
    void child.stdout.cancel().catch(() => {});
    const svc = info;
    const bodies: Record<Engine, unknown> = {
      external_engine: {
        provider_type: "external_engine",
        provider_config: {
          external_engine: { url: engine.url, auth_headers: { Authorization: "Bearer bench" } },
        },
      },
      vendor1_realtime: {
        provider_type: "vendor1_realtime",
        provider_config: { vendor1_realtime: { client_secret: "ek_bench" } },
      },
      vendor2: {
        provider_type: "vendor2",
        provider_config: { vendor2: { access_token: "bench-token", agent_id: "agent_bench" } },
      },
      vendor3: { provider_type: "vendor3", provider_config: { vendor3: { agent_id: "agent_bench" } } },
    };
    for (const kind of ENGINES) {
      const complete: number[] = [];
      const onset: number[] = [];
      let unmatched = 0;
      for (let n = 0; n < 2; n++) {
        const res = await fetch(`${svc.url}/v1/sessions`, {
          method: "POST",
          headers: { authorization: `Bearer ${svc.api_key}`, "content-type": "application/json" },
          body: JSON.stringify(bodies[kind]),
        });
        const s = await res.json();
        if (res.status !== 200) {
          throw new Error(`${kind}: create answered ${res.status} ${JSON.stringify(s)}`);
        }
        const client = new Client(
          `${svc.url.replace("http", "ws")}${new URL(s.stream_metadata.media_url).pathname}`,
          s.client_token,
        );
        await sleep(800);
        let sent: SentChunk[];
        if (kind === "external_engine") {
          await engine.talk(s.session_id, { burstMs: BURST_MS, gapMs: GAP_MS, bursts });
          sent = engine.sessions.get(s.session_id)!.sent;
        } else if (kind === "vendor1_realtime") {
          const call = v1.call();
          sent = await talk(bursts, 24000, {
            start: (b) => call.send({ type: "response.created", response: { id: `resp_${b}` } }),
            chunk: (b, pcm) =>
              call.send({
                type: "response.output_audio.delta",
                response_id: `resp_${b}`,
                item_id: `item_${b}`,
                output_index: 0,
                content_index: 0,
                delta: pcmBase64(pcm),
              }),
            end: (b) =>
              call.send({ type: "response.done", response: { id: `resp_${b}`, status: "completed" } }),
          });
        } else if (kind === "vendor2") {
          const ws = v2.call().ws;
          sent = await talk(bursts, 24000, {
            start: (b) => ws.send({ type: "turn_started", turn: b + 1, role: "assistant", start_time: 0 }),
            chunk: (_, pcm) => ws.send({ type: "audio_output", audio: pcmBase64(pcm) }),
            end: (b) =>
              ws.send({
                type: "turn_ended",
                turn: b + 1,
                role: "assistant",
                text: "",
                interrupted: false,
                start_time: 0,
                end_time: 0,
                tool_calls: [],
              }),
          });
        } else {
          const ws = v3.conversation().ws;
          sent = await talk(bursts, 16000, {
            start: () => {},
            chunk: (b, pcm) =>
              ws.send({ type: "audio", audio_event: { audio_base_64: pcmBase64(pcm), event_id: b + 1 } }),
            end: () => {},
          });
        }
        await sleep(700);
        await client.close();
        const m = await measure(client, sent, bursts, o.dir);
        complete.push(...m.complete);
        onset.push(...m.onset);
        unmatched += m.unmatched;
        const end = await fetch(`${svc.url}/v1/sessions/${s.session_id}/end?force=true`, {
          method: "POST",
          headers: { authorization: `Bearer ${svc.api_key}` },
        });
        await end.body?.cancel();
      }
      results[kind] = {
        chunks: complete.length,
        unmatched,
        complete: { p50: r1(pct(complete, 50)), p99: r1(pct(complete, 99)) },
        onset: { p50: r1(pct(onset, 50)), p99: r1(pct(onset, 99)) },
        delta_p50_vs_external: 0,
      };
    }
    for (const kind of ENGINES) {
      results[kind].delta_p50_vs_external = r1(
        results[kind].complete.p50 - results.external_engine.complete.p50,
      );
    }
    return results;
  } finally {
    await child.stdin.close().catch(() => {});
    const exited = await Promise.race([child.status.then(() => true), sleep(15_000).then(() => false)]);
    if (!exited) child.kill("SIGKILL");
    await engine.close();
    await v1.close();
    await v2.close();
    await v3.close();
  }
}

/** The figures as a Markdown table. */
export function vendorTable(results: Record<string, ChunkLatency>): string {
  const rows = Object.entries(results).map(([kind, r]) =>
    `| ${kind} | ${r.chunks} | ${r.complete.p50} ms | ${r.complete.p99} ms | ${r.onset.p50} ms | ${
      r.delta_p50_vs_external >= 0 ? "+" : ""
    }${r.delta_p50_vs_external} ms |`
  );
  return [
    "| engine (against its fake) | chunks | chunk → fragment p50 | p99 | onset p50 | Δ p50 vs external (target ≤ 5 ms) |",
    "| --- | --- | --- | --- | --- | --- |",
    ...rows,
  ].join("\n");
}

if (import.meta.main) {
  const args = parseArgs({ args: Deno.args, options: { quick: { type: "boolean", default: false } } }).values;
  const dir = await Deno.makeTempDir({ prefix: "svc-bench-vendors-" });
  try {
    const results = await benchVendors({ tls: await generateEngineTls(), dir, quick: args.quick });
    console.log(JSON.stringify(results, null, 2));
    console.log(vendorTable(results));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
