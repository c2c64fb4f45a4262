// @ts-check
/**
 * Draws the avatar of a video-free session (`video=0`) on a `<canvas>`: the art the service serves
 * (`GET /media/v0/art/{avatar_id}`: the same SVG layers its renderer rasterises), moved by the animation
 * track (`viseme`, `face`, `head` messages stamped on the audio's media timeline), at the timeline instant
 * the player's audio clock says is being heard. `./player.js` uses it when given a `canvas`.
 *
 * The art comes in the hello (`animation.art`) when it is small, else from `art_path`. The first picture is
 * the avatar at rest rasterised in one piece ({@link restPictureSvg}); then every layer is rasterised once,
 * at the canvas's pixel size — the mouths together with what lies under them ({@link mouthSheet}: from then
 * on the mouth moves over the picture at rest), then the still layer, the head and open eyes together
 * ({@link layerSheet}: the moving avatar), then the other eyes one by one, paced ({@link restPauseMs}) — and
 * kept as an `ImageBitmap` cropped to what it covers (the background and the body, which never move, as one);
 * a frame is four or five `drawImage` calls. A frame is drawn only when what it shows changes: at most once
 * per 1/25 s while only the head moves, at each step of the mouth's cross-fade (each within a refresh of
 * its time: {@link FADE_STEPS}).
 * The cross-fade is centred on the viseme's stamp: the mouth is halfway to the viseme when its sound is heard
 * (as the server's renderer draws each frame from the audio around its instant). A mouth opening from
 * silence is centred instead on where the sound starts, when the caller knows it (`soundStarts`, from the
 * decoded audio) and it lies at most {@link OPENING_LEAD_MS} before the stamp: the lip sync decides an
 * opening some tens of ms into its sound (the video player shows the opening frame at the sound's start
 * likewise). A transparent background (`bg_id: "transparent"`) draws nothing behind the avatar: the page
 * shows through. Format of the art and the messages: docs/media-plane.md#video-free-clients.
 *
 * @module
 */

import { changed } from "./avatar_damage.js";

/** @typedef {import("./avatar_damage.js").Layer} Layer @typedef {import("./avatar_damage.js").Drawn} Drawn */

/**
 * How long the mouth takes to go from one viseme to the next (ms; the server co-articulates ≈ this), centred
 * on the later viseme's stamp.
 */
const CROSSFADE_MS = 40;
/**
 * The cross-fade's steps after the viseme before: 2 — half of each, then the viseme (a 25 fps video shows a
 * 40 ms fade in one or two frames), each at the nearest step, so the fade's midpoint stays on its stamp. A
 * frame is drawn per step, not at every refresh: two draws per viseme where a 60 Hz display drew three or
 * four (and 120 Hz five or six), and Chromium's cost of a canvas frame is mostly per frame, not per pixel
 * (docs/media-plane.md, "Drawn in steps").
 */
const FADE_STEPS = 2;
/**
 * How far before an opening viseme's stamp a sound start may lie to be taken as the opening's instant (ms):
 * the lip sync stamps the first open viseme of a sound ≈ 20 or ≈ 40 ms after it starts (measured,
 * `bench/video_free_browser.ts`); a sound start follows ≥ 120 ms of quiet, so none is mistaken for another.
 */
const OPENING_LEAD_MS = 60;
/** Frames per second drawn (the animation's own rate). */
const FPS = 25;
/** The mouth's key (`drawEarly`) of the picture at rest: the closed mouth, no cross-fade. */
const REST_KEY = "sil/";
/** Animation messages kept behind the instant drawn (ms). */
const KEEP_MS = 2000;

/**
 * How long to leave the page's main thread to the rest of the page after rasterising one layer of the art
 * (all come after the first picture), which took `workMs` (ms): twice that, at most 100 ms — so the art
 * takes a third of the main thread at most while the player starts. An SVG layer takes 10–30 ms of it to
 * decode, rasterise and crop, and the ~20 of the rest back to back held it for ~0.4 s just as the sound
 * started: the audio decoder's outputs (delivered there) came 100–150 ms behind the sound's arrival, and
 * the player played 40–141 ms of its start as silence (200–560 once its first anchor no longer counted the
 * join burst). Paced, 0–29 ms; the rest is in within ~1 s (docs/media-plane.md, "The player's clock").
 * Exported for its test.
 * @param {number} workMs
 */
export function restPauseMs(workMs) {
  return Math.min(100, Math.max(0, 2 * workMs));
}

/**
 * The avatar at rest — `layers`, whole SVG documents on the 512×512 view box, in drawing order — as one SVG
 * document, so the first picture costs one SVG decode instead of one per layer (Chromium: ≈ 8 ms against ≈ 25
 * for the five layers of a stock avatar in an idle page; 20–26 ms against 60–106 in a player starting up).
 * The layers are nested as they are when no id is defined in two of them and none has a `<style>` element
 * (in one document an id and a style sheet reach every layer: a reference could resolve to another layer's
 * definition: {@link nestable}); otherwise each is an `<image>` of its own document (≈ 17 ms idle), drawn
 * exactly as apart. Exported for its test.
 * @param {string[]} layers
 * @returns {string}
 */
export function restPictureSvg(layers) {
  const inner = !nestable(layers)
    ? layers.map((svg) =>
      `<image x="0" y="0" width="512" height="512" href="data:image/svg+xml;charset=utf-8,${
        encodeURIComponent(svg)
      }"/>`
    ).join("")
    : layers.join("");
  return `<svg xmlns="http://www.w3.org/2000/svg" width="512" height="512" viewBox="0 0 512 512">${inner}</svg>`;
}

/**
 * Whether SVG documents can be nested in one without one reaching another: no id is defined in two of them
 * and none has a `<style>` element. Ids are read from the service's serialisation (attributes in double
 * quotes); a text that merely looks like an id can only make it false.
 * @param {string[]} docs
 */
function nestable(docs) {
  const seen = new Set();
  for (const svg of docs) {
    if (/<style[\s>]/i.test(svg)) return false;
    for (const id of new Set(Array.from(svg.matchAll(/\sid="([^"]*)"/g), (m) => m[1]))) {
      if (seen.has(id)) return false;
      seen.add(id);
    }
  }
  return true;
}

/** Transparent margin around the mouth's box in a sheet of mouths (view-box px): anti-aliased edges. */
const SHEET_MARGIN = 4;

/** An SVG document as a decoded image. @param {string} svg */
async function decodedSvg(svg) {
  const img = new Image();
  img.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`;
  await img.decode();
  return img;
}

/**
 * Mouths (whole SVG documents drawn within `box`, view-box px), rasterised together: one SVG document of
 * cells, each the canvas's pixels around the box (a {@link SHEET_MARGIN} wider) on the same pixel grid as
 * the canvas, decoded and rasterised once and cut into one layer per mouth — one decode instead of one per
 * mouth. Null when they cannot share a document ({@link nestable}) or there is no box. Exported for its
 * test.
 * @param {string[]} svgs
 * @param {any} box
 * @param {number} w
 * @param {number} h
 * @returns {Promise<Layer[] | null>}
 */
export async function mouthSheet(svgs, box, w, h) {
  if (!box || ![box.x, box.y, box.width, box.height].every(Number.isFinite) || !nestable(svgs)) return null;
  const sx = w / 512, sy = h / 512;
  const x0 = Math.max(0, Math.floor((box.x - SHEET_MARGIN) * sx));
  const y0 = Math.max(0, Math.floor((box.y - SHEET_MARGIN) * sy));
  const cw = Math.min(w, Math.ceil((box.x + box.width + SHEET_MARGIN) * sx)) - x0;
  const ch = Math.min(h, Math.ceil((box.y + box.height + SHEET_MARGIN) * sy)) - y0;
  if (!(cw > 0 && ch > 0) || svgs.length === 0) return null;
  const cuts = await sheetOf(svgs, cw, ch, `${x0 / sx} ${y0 / sy} ${cw / sx} ${ch / sy}`);
  return cuts.map((b) => ({ b, x: x0, y: y0 }));
}

/**
 * Canvas-sized layers, each drawn from a group of whole SVG documents on the 512×512 view box (in order),
 * rasterised together: one SVG document of canvas-sized cells, decoded and rasterised once and cut into one
 * bitmap per group. Null when the documents cannot share one ({@link nestable}). (Tested through the
 * drawer's first layered frame: `tests/sdk/avatar_canvas_start_browser_test.ts`.)
 * @param {string[][]} groups
 * @param {number} w
 * @param {number} h
 * @returns {Promise<ImageBitmap[] | null>}
 */
async function layerSheet(groups, w, h) {
  if (!nestable(groups.flat()) || groups.length === 0) return null;
  return await sheetOf(groups.map((docs) => docs.join("")), w, h, "0 0 512 512");
}

/**
 * Rasterises `contents` (SVG markup on the 512×512 view box) as the cells of one SVG document, each
 * `cellW`×`cellH` pixels showing `viewBox` of it, and cuts the result into one bitmap per cell: one decode
 * and one rasterising for them all. The caller checks that they can share a document ({@link nestable}).
 * @param {string[]} contents
 * @param {number} cellW
 * @param {number} cellH
 * @param {string} viewBox
 * @returns {Promise<ImageBitmap[]>}
 */
async function sheetOf(contents, cellW, cellH, viewBox) {
  const cols = Math.ceil(Math.sqrt(contents.length)), rows = Math.ceil(contents.length / cols);
  const at = (/** @type {number} */ i) => [(i % cols) * cellW, Math.floor(i / cols) * cellH];
  const cells = contents.map((c, i) =>
    `<svg x="${at(i)[0]}" y="${
      at(i)[1]
    }" width="${cellW}" height="${cellH}" viewBox="${viewBox}" preserveAspectRatio="none">${c}</svg>`
  ).join("");
  const sheetW = cols * cellW, sheetH = rows * cellH;
  const sheet = await createImageBitmap(
    await decodedSvg(
      `<svg xmlns="http://www.w3.org/2000/svg" width="${sheetW}" height="${sheetH}" viewBox="0 0 ${sheetW} ${sheetH}">${cells}</svg>`,
    ),
  );
  try {
    return await Promise.all(
      contents.map((_, i) => createImageBitmap(sheet, at(i)[0], at(i)[1], cellW, cellH)),
    );
  } finally {
    sheet.close();
  }
}

/**
 * @typedef {object} AvatarDrawer
 * @property {(animation: { art_path?: string; art?: unknown; bg_id?: string }) => void} configure The hello's
 *   `animation`: loads the art (once) — the document it carries (`art`), else the one at `art_path`.
 * @property {(msg: { type: string; t_ms: number } & Record<string, any>) => void} push An animation message.
 * @property {(tMs: number) => void} interrupt Barge-in: visemes stamped after `tMs` are dropped.
 * @property {(tMs: number) => boolean} draw Draws the avatar at timeline instant `tMs`; true once drawn.
 * @property {() => boolean} ready Whether every layer of the art is rasterised (the avatar is drawn before: the
 *   first picture needs only the still layer, the head, open eyes and the closed mouth).
 * @property {() => { frames: number; visemes: number; stage: "none" | "rest" | "mouths" | "moving" | "complete" }} stats
 *   Frames drawn, viseme messages received, and what the drawing has of the art: nothing drawn yet, the
 *   picture at rest, the mouths moving over it, the moving avatar, every layer.
 * @property {() => void} close
 */

/**
 * @param {{ canvas: HTMLCanvasElement; origin: string; fetch?: typeof fetch; soundStarts?: () => number[]; token?: () => string }} options
 *   `origin`: the service's http(s) origin (the media URL's). `soundStarts`: timeline instants (ms) where a
 *   sound starts after a silence (the player's decoded audio), if known.
 * @returns {AvatarDrawer}
 */
export function createAvatarDrawer(options) {
  const { canvas } = options;
  const doFetch = options.fetch ?? fetch;
  const soundStarts = options.soundStarts ?? (() => []);
  const ctx = /** @type {CanvasRenderingContext2D} */ (canvas.getContext("2d"));
  // A canvas whose context was lost and restored is blank: the next frame is drawn whole.
  canvas.addEventListener?.("contextrestored", () => {
    drawn = null;
    lastKey = "";
    restDrawn = false;
  });
  /** @typedef {{ still: Layer | null; head: Layer | null; eyes: Record<string, Record<string, Layer | null>>; mouths: Record<string, Layer | null>; scale: number }} Art */
  /** @type {Art | null} */
  let art = null;
  /** @type {Promise<void> | null} */
  let loading = null;
  let closed = false;
  /**
   * The avatar at rest (open eyes, closed mouth, the head in place), the whole canvas: drawn until the layers
   * the moving avatar needs are rasterised (see `load`).
   * @type {HTMLImageElement | null}
   */
  let restPicture = null;
  let restDrawn = false;
  /** @type {((v?: unknown) => void) | null} Called when the rest picture is drawn. */
  let restShown = null;
  /**
   * The mouths and what lies under them, cut to the mouth's box: drawn over the picture at rest until the
   * layers that move the head are in (see `load`).
   * @type {{ under: Layer; mouths: Record<string, Layer | null> } | null}
   */
  let early = null;
  /** Every layer of the art is rasterised (the first picture needs only a few: see `load`). */
  let complete = false;
  /** @type {[number, string][]} */
  let visemes = [];
  /** @type {[number, { state: string; eyes: string; look: string }][]} */
  let faces = [];
  /** @type {[number, number, number][]} */
  let heads = [];
  let lastKey = "";
  let lastFrame = -1;
  let lastFading = false;
  /** @type {Drawn | null} What the canvas shows. */
  let drawn = null;
  let frames = 0;
  let visemeCount = 0;

  /** @param {string} svg @param {number} w @param {number} h */
  const bitmap = async (svg, w, h) =>
    await createImageBitmap(await decodedSvg(svg), {
      resizeWidth: w,
      resizeHeight: h,
      resizeQuality: "high",
    });

  /**
   * A canvas-sized bitmap cropped to its non-transparent pixels (null if it has none): a frame then blends
   * only the pixels a layer covers, not the whole canvas for each layer.
   * @param {ImageBitmap} full
   * @returns {Promise<Layer | null>}
   */
  const crop = async (full) => {
    const w = full.width, h = full.height;
    const c = new OffscreenCanvas(w, h);
    const cx =
      /** @type {OffscreenCanvasRenderingContext2D} */ (c.getContext("2d", { willReadFrequently: true }));
    cx.drawImage(full, 0, 0);
    const d = cx.getImageData(0, 0, w, h).data;
    let x0 = w, y0 = h, x1 = -1, y1 = -1;
    for (let y = 0; y < h; y++) {
      for (let x = 0, i = y * w * 4 + 3; x < w; x++, i += 4) {
        if (d[i] === 0) continue;
        if (x < x0) x0 = x;
        if (x > x1) x1 = x;
        if (y < y0) y0 = y;
        y1 = y;
      }
    }
    if (x1 < 0) {
      full.close();
      return null;
    }
    const b = await createImageBitmap(full, x0, y0, x1 - x0 + 1, y1 - y0 + 1);
    full.close();
    return { b, x: x0, y: y0 };
  };
  /** @param {string} svg @param {number} w @param {number} h */
  const layer = async (svg, w, h) => await crop(await bitmap(svg, w, h));
  /**
   * Makes a piece of the art, then leaves the main thread to the page for {@link restPauseMs} of the time
   * it took.
   * @template T
   * @param {() => Promise<T>} make
   * @returns {Promise<T>}
   */
  const paced = async (make) => {
    const started = performance.now();
    const made = await make();
    await new Promise((r) => setTimeout(r, restPauseMs(performance.now() - started)));
    return made;
  };

  /**
   * The art document the hello carries when it is small (a stock avatar's: docs/media-plane.md#the-art).
   * @param {{ art?: unknown }} animation
   */
  const carriedArt = (animation) => {
    const carried = /** @type {any} */ (animation.art);
    return carried && typeof carried === "object" && carried.format === "avatar-art.v0" ? carried : null;
  };
  /** @param {{ art_path?: string }} animation */
  const fetchArt = async (animation) => {
    const url = new URL(animation.art_path ?? "", options.origin);
    // A project avatar's art (`av_…`) is served only with the session's token; a stock avatar's is public.
    if (url.pathname.startsWith("/media/v0/art/av_") && options.token) {
      url.searchParams.set("token", options.token());
    }
    const res = await doFetch(url.href);
    if (!res.ok) throw new Error(`the avatar's art answered ${res.status}`);
    return await res.json();
  };

  /** @param {{ art_path?: string; art?: unknown; bg_id?: string }} animation */
  const load = async (animation) => {
    // (a carried document is used at once: the first picture's decoding starts within `configure`)
    const doc = carriedArt(animation) ?? await fetchArt(animation);
    const w = canvas.width, h = canvas.height;
    const bgSvg = doc.backgrounds?.[animation.bg_id ?? ""] ?? null;
    /** @type {Record<string, Record<string, string>>} */
    const eyeSvgs = doc.eyes;
    /** @type {Record<string, string>} */
    const mouthSvgs = doc.mouths;
    // First the avatar at rest, in one piece: the first picture (a viseme or an eye state shows as at rest
    // until its layer is in).
    // (the layers the moving avatar needs first: the still ones, the head, open eyes, the closed mouth)
    const groups = [[bgSvg, doc.body], [doc.head], [eyeSvgs.open?.neutral], [mouthSvgs.sil]].map((
      g,
    ) => /** @type {string[]} */ (g.filter((x) => typeof x === "string" && x !== "")));
    const restLayers = groups.flat();
    // (drawn from the decoded image: rasterised by the drawing itself, 5–10 ms sooner than a bitmap made first)
    // (one the browser cannot decode: the first picture waits for the layers)
    const restImage = await decodedSvg(restPictureSvg(restLayers)).catch(() => null);
    if (closed) return;
    if (restImage) {
      restPicture = restImage;
      // The layers' rasterising holds the main thread for tens of ms: it starts once the picture is drawn
      // (the page's next animation frame), or after 1 s in a page that draws no frames (a hidden tab, where
      // nothing is shown meanwhile; a page starved of frames by a busy machine still draws the picture first).
      await new Promise((resolve) => {
        restShown = resolve;
        setTimeout(resolve, 1000);
      });
      restShown = null;
      if (closed) return;
    }
    // Then the 15 mouths, with what lies under them (the avatar at rest without its mouth), cut to the mouth's
    // box on one sheet (`mouthSheet`: one decode of small cells): the mouth moves over the picture at rest
    // from then on (the head still, the eyes open: `early`), before the layers that move the head are in — a
    // viewer joining speech sees its visemes, not the closed mouth, from its first words (they came 60–150
    // ms after the first words when the mouths followed the first layers). Null when they cannot share a
    // document, the art has no mouth box, or the browser could not draw the sheet: the mouths then come one
    // by one after the first layers.
    const mouthNames = Object.keys(mouthSvgs);
    const under = [...groups[0], ...groups[1], ...groups[2]];
    const mouthDocs = mouthNames.map((v) => mouthSvgs[v]);
    // (`mouthSheet` checks its cells' documents: the ones under the mouth share one cell)
    const sheet = nestable([...under, ...mouthDocs])
      ? await paced(() => mouthSheet([under.join(""), ...mouthDocs], doc.mouth_box, w, h).catch(() => null))
      : null;
    if (closed) {
      for (const l of sheet ?? []) l.b.close();
      return;
    }
    /** @type {Record<string, Layer | null>} */
    const mouths = {};
    if (sheet) {
      mouthNames.forEach((v, i) => mouths[v] = sheet[i + 1]);
      early = { under: sheet[0], mouths };
      // (the picture at rest shows the closed mouth: nothing to draw until a viseme comes)
      lastKey = restDrawn ? REST_KEY : "";
    }
    // What never moves (the background, the body): one layer.
    const stillLayer = async () => {
      const still = new OffscreenCanvas(w, h);
      const sx = /** @type {OffscreenCanvasRenderingContext2D} */ (still.getContext("2d"));
      const parts = await Promise.all([bgSvg, doc.body].filter(Boolean).map((svg) => bitmap(svg, w, h)));
      for (const b of parts) {
        sx.drawImage(b, 0, 0);
        b.close();
      }
      return await crop(still.transferToImageBitmap());
    };
    // Then what the moving avatar needs — the still layer, the head, open eyes looking ahead (and the closed
    // mouth if the mouths' sheet failed) — on one sheet (one decode) when they can share a document, else one
    // after the other; paced as the rest either way: the sound starts up meanwhile (decoded one by one and
    // rasterised together, they held the main thread for 60–100 ms just then, and a joining viewer heard the
    // first words ≈ 30 ms later). It is drawn once they are in (an eye state not rasterised yet shows the
    // open eyes for those few frames).
    const firstGroups = sheet ? groups.slice(0, 3) : groups;
    /** @type {(Layer | null)[] | null} */
    let firsts = await paced(async () => {
      const fulls = await layerSheet(firstGroups, w, h).catch(() => null);
      return fulls && await Promise.all(fulls.map((full) => crop(full)));
    });
    if (closed) {
      for (const l of firsts ?? []) l?.b.close();
      return;
    }
    if (!firsts) {
      firsts = [];
      for (
        const make of [
          stillLayer,
          () => layer(doc.head, w, h),
          () => eyeSvgs.open?.neutral ? layer(eyeSvgs.open.neutral, w, h) : Promise.resolve(null),
          ...(sheet ? [] : [() => mouthSvgs.sil ? layer(mouthSvgs.sil, w, h) : Promise.resolve(null)]),
        ]
      ) {
        firsts.push(await paced(make));
        if (closed) {
          for (const l of firsts) l?.b.close();
          return;
        }
      }
    }
    const [still, head, open] = firsts;
    if (!sheet) mouths.sil = firsts[3] ?? null;
    /** @type {Art} */
    const next = {
      still,
      head,
      eyes: { open: { neutral: open } },
      mouths,
      scale: w / (doc.view_box?.[0] ?? 512),
    };
    if (closed) return release(next);
    art = next;
    restPicture = null;
    early?.under?.b.close();
    early = null;
    // (the next frame is drawn whole)
    drawn = null;
    lastKey = "";
    const others = mouthNames.filter((v) => v !== "sil");
    // …and the rest (the mouths too if they could not share a document), each layer in place as soon as it
    // is rasterised (the next frame that needs it is drawn anew).
    /** @type {[string, string, string | null][]} */
    const rest = [
      ...(sheet ? [] : others).map((v) => /** @type {[string, string, null]} */ ([mouthSvgs[v], v, null])),
      ...Object.entries(eyeSvgs).flatMap(([state, looks]) =>
        Object.keys(looks).filter((look) => state !== "open" || look !== "neutral").map((
          look,
        ) => /** @type {[string, string, string]} */ ([looks[look], state, look]))
      ),
    ];
    for (const [svg, a, b] of rest) {
      const l = await paced(() => layer(svg, w, h));
      if (closed || art !== next) {
        l?.b.close();
        return;
      }
      if (b === null) next.mouths[a] = l;
      else (next.eyes[a] ??= {})[b] = l;
      lastKey = "";
    }
    complete = true;
  };

  /** Closes the bitmaps of an art. @param {Art} a */
  const release = (a) => {
    const all = [a.still, a.head, ...Object.values(a.mouths)];
    for (const looks of Object.values(a.eyes)) all.push(...Object.values(looks));
    for (const l of all) l?.b.close();
  };
  /**
   * Clips the canvas's drawing to a box and clears it (within a `save`/`restore`).
   * @param {number} x @param {number} y @param {number} w @param {number} h
   */
  const clearIn = (x, y, w, h) => {
    ctx.beginPath();
    ctx.rect(x, y, w, h);
    ctx.clip();
    ctx.clearRect(x, y, w, h);
  };
  /**
   * The mouth, cross-fading from `below` (the viseme before, drawn at `1 − alpha`) when there is one.
   * @param {Layer | null} below @param {Layer | null} mouth @param {number} alpha
   */
  const putMouth = (below, mouth, alpha) => {
    if (below) {
      ctx.globalAlpha = 1 - alpha;
      put(ctx, below);
      ctx.globalAlpha = alpha;
    }
    put(ctx, mouth);
  };
  /** @param {CanvasRenderingContext2D} c @param {Layer | null | undefined} l */
  const put = (c, l) => {
    if (l) c.drawImage(l.b, l.x, l.y);
  };

  /**
   * The last entry at or before `t` (entries are in time order).
   * @template T
   * @param {[number, ...T[]][]} list
   * @param {number} t
   */
  const lastAt = (list, t) => {
    let i = list.length - 1;
    while (i >= 0 && list[i][0] > t) i--;
    return i;
  };

  /**
   * When viseme `i`'s cross-fade is centred: its stamp, or — a mouth opening from silence — the sound's start
   * just before it.
   * @param {number} i
   */
  const startOf = (i) => {
    const t = visemes[i][0];
    if (i === 0 || visemes[i - 1][1] !== "sil" || visemes[i][1] === "sil") return t;
    for (const o of soundStarts()) if (o >= t - OPENING_LEAD_MS && o <= t) return o;
    return t;
  };

  /**
   * The mouth at timeline instant `tMs`: its viseme and, while it cross-fades, the one before and how far.
   * The cross-fade is centred on a viseme's stamp: at instant t it is the viseme of t + half a fade.
   * @param {number} tMs
   */
  const mouthAt = (tMs) => {
    const tv = tMs + CROSSFADE_MS / 2;
    let vi = lastAt(visemes, tv);
    // (an opening whose sound starts before its stamp begins there: it may be the next viseme's)
    if (vi + 1 < visemes.length && startOf(vi + 1) <= tv) vi++;
    const viseme = vi >= 0 ? visemes[vi][1] : "sil";
    const since = vi >= 0 ? tv - startOf(vi) : Infinity;
    const prev = vi > 0 ? visemes[vi - 1][1] : "sil";
    // The fade's nearest step: the viseme before for its first quarter (shown whole: `prev` is read only
    // while fading), half of each to three quarters, then the viseme.
    const step = since < CROSSFADE_MS && prev !== viseme
      ? Math.round(since / CROSSFADE_MS * FADE_STEPS) / FADE_STEPS
      : 1;
    if (step === 0) return { viseme: prev, prev, fading: false, alpha: 1 };
    return { viseme, prev, fading: step < 1, alpha: step };
  };

  /**
   * Before the layers that move the head are in: the mouth at `tMs` over the picture at rest, within the
   * mouth's box — what lies under the mouth, then the mouth (the head in place, the eyes open, as at rest).
   * @param {number} tMs
   */
  const drawEarly = (tMs) => {
    if (!early) return;
    const { viseme, prev, fading, alpha } = mouthAt(tMs);
    const key = `${viseme}/${fading ? `${prev}/${alpha}` : ""}`;
    if (key === lastKey) return;
    lastKey = key;
    const { under, mouths } = early;
    const mouth = (viseme in mouths ? mouths[viseme] : mouths.sil) ?? null;
    const below = fading ? mouths[prev] ?? null : null;
    ctx.save();
    clearIn(under.x, under.y, under.b.width, under.b.height);
    put(ctx, under);
    putMouth(below, mouth, alpha);
    ctx.restore();
    frames++;
  };

  return {
    configure(animation) {
      loading ??= load(animation).catch((err) => console.warn("avatar player: the art did not load", err));
    },
    push(msg) {
      if (typeof msg.t_ms !== "number") return;
      if (msg.type === "viseme") {
        visemeCount++;
        inOrder(visemes, [msg.t_ms, String(msg.viseme)]);
      } else if (msg.type === "face") {
        inOrder(faces, [msg.t_ms, { state: msg.state, eyes: msg.eyes, look: msg.look }]);
      } else if (msg.type === "head") inOrder(heads, [msg.t_ms, Number(msg.dx) || 0, Number(msg.dy) || 0]);
    },
    interrupt(tMs) {
      visemes = visemes.filter(([t]) => t <= tMs);
    },
    draw(tMs) {
      if (closed) return false;
      if (!art) {
        if (!restPicture) return false;
        if (!restDrawn) {
          ctx.clearRect(0, 0, canvas.width, canvas.height);
          ctx.drawImage(restPicture, 0, 0, canvas.width, canvas.height);
          restDrawn = true;
          lastKey = REST_KEY;
          frames++;
          restShown?.();
        }
        if (early) drawEarly(tMs);
        return true;
      }
      const { viseme, prev, fading, alpha } = mouthAt(tMs);
      const frame = Math.floor(tMs * FPS / 1000);
      const fi = lastAt(faces, tMs);
      const face = fi >= 0 ? faces[fi][1] : { state: "idle", eyes: "open", look: "neutral" };
      const hi = lastAt(heads, tMs);
      let dx = 0, dy = 0;
      if (hi >= 0) {
        [, dx, dy] = heads[hi];
        const next = heads[hi + 1];
        if (next) {
          const a = (tMs - heads[hi][0]) / Math.max(1, next[0] - heads[hi][0]);
          dx += (next[1] - dx) * a;
          dy += (next[2] - dy) * a;
        }
      }
      const s = art.scale;
      const ox = Math.round(dx * s), oy = Math.round(dy * s);
      // Drawn only when what it shows changes; while only the head moves, at most once per 1/25 s.
      const key = `${viseme}/${fading ? `${prev}/${alpha}` : ""}/${face.eyes}/${face.look}/${ox}/${oy}`;
      if (key === lastKey) return true;
      const onlyMoved = !fading && !lastFading && lastKey.startsWith(`${viseme}//${face.eyes}/${face.look}/`);
      if (onlyMoved && frame === lastFrame) return true;
      lastKey = key;
      lastFrame = frame;
      lastFading = fading;
      const found = art.eyes[face.eyes]?.[face.look];
      const eyes = found === undefined ? art.eyes.open?.neutral ?? null : found;
      const mouth = (viseme in art.mouths ? art.mouths[viseme] : art.mouths.sil) ?? null;
      const under = fading ? art.mouths[prev] ?? null : null;
      /** @type {Drawn} */
      const now = {
        art,
        w: canvas.width,
        h: canvas.height,
        ox,
        oy,
        head: art.head,
        eyes,
        mouth,
        under,
        alpha: under ? alpha : 1,
      };
      const dirty = changed(drawn, now);
      drawn = now;
      ctx.save();
      if (dirty) {
        // Only what changed is drawn anew (the eyes, the mouth, or the head and all on it when it moved): the
        // browser rasterises and composites those pixels, not the whole canvas.
        clearIn(dirty.x, dirty.y, dirty.w, dirty.h);
      } else ctx.clearRect(0, 0, canvas.width, canvas.height);
      put(ctx, art.still);
      ctx.translate(ox, oy);
      put(ctx, art.head);
      put(ctx, eyes);
      putMouth(under, mouth, alpha);
      ctx.restore();
      frames++;
      // Forget what is long past.
      const old = tMs - KEEP_MS;
      if (visemes.length > 64 && visemes[0][0] < old) {
        visemes = visemes.slice(Math.max(0, lastAt(visemes, old)));
      }
      if (faces.length > 64 && faces[0][0] < old) faces = faces.slice(Math.max(0, lastAt(faces, old)));
      if (heads.length > 64 && heads[0][0] < old) heads = heads.slice(Math.max(0, lastAt(heads, old)));
      return true;
    },
    ready: () => art !== null && complete,
    stats: () => ({
      frames,
      visemes: visemeCount,
      stage: complete ? "complete" : art ? "moving" : early ? "mouths" : restDrawn ? "rest" : "none",
    }),
    close() {
      closed = true;
      restPicture = null;
      if (early) {
        for (const l of [early.under, ...Object.values(early.mouths)]) l?.b.close();
        early = null;
      }
      if (!art) return;
      release(art);
      art = null;
    },
  };
}

/**
 * Adds a stamped entry in stamp order: over the WebSocket messages come in order (an append), over
 * WebRTC's unordered data channel one may overtake another (`./player_webrtc.js`).
 * @template {[number, ...any[]]} T
 * @param {T[]} list
 * @param {T} entry
 */
function inOrder(list, entry) {
  let i = list.length;
  while (i > 0 && list[i - 1][0] > entry[0]) i--;
  list.splice(i, 0, entry);
}
