/**
 * `deno task bench:avatars`: what a project avatar costs against a stock one, measured side by side and
 * alternating in one run (a shared machine is noisy; compare within a run, never across runs):
 *
 * - video: a talking frame composed by the reference renderer (512×512, every frame a new mouth pose) for a
 *   stock avatar (`ada`), a style avatar and a drawing avatar (docs/avatars.md's worked example), and the
 *   one-off rasterising of a project avatar's layers when its first session starts (`Renderer.prepare`);
 * - video-free: the server renders nothing; what differs is the art document a client fetches once (its
 *   build time and size), stock against project;
 * - the API over HTTP (loopback): `POST /v1/avatars` from a style and from a drawing, and
 *   `GET …/preview.png`, p50 and p95.
 *
 * `deno task bench` runs the same measures (its section "project avatars", with sessions of each avatar:
 * create → first frame and connect → first frame); `deno task bench:avatars` runs them alone, against a
 * harness served on loopback.
 *
 * @module
 */
import { acceptSvg } from "../src/avatar_svg/accept.ts";
import { artDocument, artDocumentOfLayers } from "../src/media/art/document.ts";
import { layersOfDrawing } from "../src/media/art/drawing_art.ts";
import { layersOfLook } from "../src/media/art/layers.ts";
import { lookOfStyle } from "../src/media/art/style_art.ts";
import { loadArtBank } from "../src/media/art_bank.ts";
import { CATALOG } from "../src/media/catalog.ts";
import { FrameCache } from "../src/media/frame_cache.ts";
import { VISEMES } from "../src/media/lipsync/visemes.ts";
import { ReferenceRenderer } from "../src/media/reference_renderer.ts";
import { parseAvatarStyle } from "../src/vocabulary/avatar_style.ts";
import { createHarness } from "../testing/harness.ts";

/** docs/avatars.md's worked example. */
export const EXAMPLE_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 200 200">
  <defs><linearGradient id="coat" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="#2a5db0"/><stop offset="1" stop-color="#173a78"/></linearGradient></defs>
  <path d="M30 200 C36 160 70 150 100 150 C130 150 164 160 170 200 Z" fill="url(#coat)"/>
  <g id="head">
    <rect x="88" y="120" width="24" height="34" fill="#d9a47c"/>
    <ellipse cx="100" cy="90" rx="48" ry="56" fill="#e8b894"/>
    <path d="M52 84 C50 40 150 40 148 84 C130 60 70 60 52 84 Z" fill="#3b2418"/>
    <g id="eyes-open"><circle cx="82" cy="90" r="6" fill="#fff"/><circle cx="82" cy="90" r="3" fill="#223"/><circle cx="118" cy="90" r="6" fill="#fff"/><circle cx="118" cy="90" r="3" fill="#223"/></g>
    <g id="eyes-closed"><path d="M76 91 Q82 95 88 91 M112 91 Q118 95 124 91" stroke="#223" stroke-width="2" fill="none"/></g>
    <g id="brows"><path d="M74 78 Q82 73 90 77 M110 77 Q118 73 126 78" stroke="#3b2418" stroke-width="3" fill="none"/></g>
    <rect id="mouth" x="86" y="112" width="28" height="16" fill="#b8606a"/>
  </g>
</svg>`;

const STYLE = {
  hair_style: "afro",
  face_shape: "round",
  facial_hair: "beard",
  accessory: "headset",
} as const;

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
}

const f2 = (n: number) => n.toFixed(2);

/** Per-frame cost of the video, per avatar, and the one-off preparation of each project avatar. */
export interface AvatarVideoRow {
  avatar: string;
  meanMs: number;
  p50Ms: number;
  p95Ms: number;
  /** null: a stock avatar, rasterised at start-up. */
  prepareMs: number | null;
}

/** What the art document of each avatar costs a video-free client. */
export interface AvatarDocRow {
  avatar: string;
  p50Ms: number;
  bytes: number;
}

/** The talking-frame cost (`frames` each, alternating blocks) and the art documents, stock against project. */
export async function benchAvatarArt(
  frames: number,
): Promise<{ video: AvatarVideoRow[]; doc: AvatarDocRow[] }> {
  const size = 512;
  const art = await loadArtBank(CATALOG, size, size);
  const renderer = new ReferenceRenderer(art, 25, new FrameCache(64e6));
  const styleLayers = layersOfLook(lookOfStyle(parseAvatarStyle(STYLE)));
  const svgLayers = layersOfDrawing(acceptSvg(EXAMPLE_SVG));
  const prepare: Record<string, number> = {};
  for (const [id, layers] of [["av_style", styleLayers], ["av_svg", svgLayers]] as const) {
    const t0 = performance.now();
    await renderer.prepare(id, layers);
    prepare[id] = performance.now() - t0;
  }
  const variants = ["ada", "av_style", "av_svg"];
  const sessions = variants.map((id) => renderer.open({ avatarId: id, bgId: "studio", seed: 1 }));
  const times: number[][] = variants.map(() => []);
  const block = 50;
  for (let start = 0; start < frames; start += block) {
    for (let v = 0; v < variants.length; v++) {
      for (let i = start; i < start + block; i++) {
        // Talking: a blend of two visemes that changes every frame (never the cached rest face).
        const w = new Float32Array(VISEMES.length);
        w[(i * 7) % VISEMES.length] = 0.5 + 0.5 * Math.sin(i / 3);
        w[(i * 3 + 5) % VISEMES.length] += 1 - w[(i * 7) % VISEMES.length];
        const t0 = performance.now();
        await sessions[v].renderFrame({
          index: i,
          timeMs: i * 40,
          audio: new Int16Array(1920),
          sampleRate: 48000,
          speaking: true,
          face: {
            visemes: w,
            eyes: i % 40 === 0 ? "closed" : "open",
            look: "neutral",
            headDx: (i % 5) - 2,
            headDy: 0,
            mode: "speaking",
          },
        });
        times[v].push(performance.now() - t0);
      }
    }
  }
  const video = variants.map((avatar, v) => ({
    avatar,
    meanMs: times[v].reduce((a, b) => a + b, 0) / times[v].length,
    p50Ms: pct(times[v], 0.5),
    p95Ms: pct(times[v], 0.95),
    prepareMs: prepare[avatar] ?? null,
  }));

  // Video-free: the art document a client fetches once.
  const docTimes: Record<string, number[]> = { ada: [], av_style: [], av_svg: [] };
  const docBytes: Record<string, number> = {};
  for (let round = 0; round < 20; round++) {
    for (const id of Object.keys(docTimes)) {
      const t0 = performance.now();
      const doc = id === "ada" ? artDocument(CATALOG, "ada") : artDocumentOfLayers(
        CATALOG,
        id,
        id === "av_style"
          ? layersOfLook(lookOfStyle(parseAvatarStyle(STYLE)))
          : layersOfDrawing(acceptSvg(EXAMPLE_SVG)),
      );
      const text = JSON.stringify(doc);
      docTimes[id].push(performance.now() - t0);
      docBytes[id] = text.length;
    }
  }
  const doc = Object.keys(docTimes).map((avatar) => ({
    avatar,
    p50Ms: pct(docTimes[avatar], 0.5),
    bytes: docBytes[avatar],
  }));
  return { video, doc };
}

/** The avatars API over HTTP: create (style, drawing) and preview, p50/p95 ms; the avatars it made. */
export interface AvatarApiResult {
  createStyle: number[];
  createSvg: number[];
  preview: number[];
  /** One avatar made from the style and one from the drawing (for sessions). */
  styleId: string;
  svgId: string;
}

/** `n` creates of each kind (alternating) and `n` previews, over HTTP against `url` with `apiKey`. */
export async function benchAvatarApi(url: string, apiKey: string, n: number): Promise<AvatarApiResult> {
  const headers = { authorization: `Bearer ${apiKey}`, "content-type": "application/json" };
  const create: Record<string, number[]> = { style: [], svg: [] };
  const ids: Record<string, string[]> = { style: [], svg: [] };
  for (let i = 0; i < n; i++) {
    for (const kind of ["style", "svg"] as const) {
      const body = kind === "style" ? { name: `s${i}`, style: STYLE } : { name: `d${i}`, svg: EXAMPLE_SVG };
      const t0 = performance.now();
      const res = await fetch(`${url}/v1/avatars`, { method: "POST", headers, body: JSON.stringify(body) });
      const answer = await res.json();
      create[kind].push(performance.now() - t0);
      if (res.status !== 201) throw new Error(`POST /v1/avatars: ${res.status} ${JSON.stringify(answer)}`);
      ids[kind].push(answer.avatar_id);
    }
  }
  const preview: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const res = await fetch(`${url}/v1/avatars/${ids.style[i % ids.style.length]}/preview.png?viseme=aa`, {
      headers: { authorization: `Bearer ${apiKey}` },
    });
    await res.arrayBuffer();
    preview.push(performance.now() - t0);
    if (res.status !== 200) throw new Error(`preview: ${res.status}`);
  }
  // The rest are deleted: the project's quota is 100.
  for (const id of [...ids.style.slice(1), ...ids.svg.slice(1)]) {
    const res = await fetch(`${url}/v1/avatars/${id}`, { method: "DELETE", headers });
    await res.body?.cancel();
  }
  return {
    createStyle: create.style,
    createSvg: create.svg,
    preview,
    styleId: ids.style[0],
    svgId: ids.svg[0],
  };
}

/** The tables of {@link benchAvatarArt} and {@link benchAvatarApi} (Markdown). */
export function avatarTables(
  art: { video: AvatarVideoRow[]; doc: AvatarDocRow[] },
  api: AvatarApiResult | null,
  frames: number,
): string {
  const out: string[] = [];
  out.push(`video (512×512, ${frames} talking frames each, alternating blocks of 50):`);
  out.push("| avatar | mean ms/frame | p50 | p95 | prepare (once per worker) ms |");
  out.push("|---|---|---|---|---|");
  for (const r of art.video) {
    out.push(
      `| ${r.avatar} | ${f2(r.meanMs)} | ${f2(r.p50Ms)} | ${f2(r.p95Ms)} | ${
        r.prepareMs === null ? "at start-up" : f2(r.prepareMs)
      } |`,
    );
  }
  out.push("\nvideo-free (the art document, built and serialised; 20 rounds alternating):");
  out.push("| avatar | p50 ms | bytes |");
  out.push("|---|---|---|");
  for (const r of art.doc) out.push(`| ${r.avatar} | ${f2(r.p50Ms)} | ${r.bytes} |`);
  if (api) {
    out.push("\nAPI over HTTP (loopback; the first upload and preview load the rasteriser):");
    out.push("| request | n | p50 ms | p95 ms | target p50 |");
    out.push("|---|---|---|---|---|");
    const row = (name: string, xs: number[], target: string) =>
      out.push(`| ${name} | ${xs.length} | ${f2(pct(xs, 0.5))} | ${f2(pct(xs, 0.95))} | ${target} |`);
    row("POST /v1/avatars (style)", api.createStyle, "≤ 200 ms");
    row("POST /v1/avatars (svg, with cost check)", api.createSvg, "");
    row("GET …/preview.png?viseme=aa", api.preview, "≤ 300 ms");
  }
  return out.join("\n");
}

if (import.meta.main) {
  const frames = Number(Deno.args[Deno.args.indexOf("--frames") + 1]) || 600;
  const art = await benchAvatarArt(frames);
  // The API, over HTTP on loopback (a harness: in-memory KV).
  const h = await createHarness({ env: { SVC_RATE_LIMIT_PER_MINUTE: "0" } });
  try {
    const url = h.serve();
    const key = await h.key("proj_bench");
    const api = await benchAvatarApi(url, key, 30);
    console.log(avatarTables(art, api, frames));
  } finally {
    await h.close();
  }
}
