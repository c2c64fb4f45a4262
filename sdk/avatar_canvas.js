// @ts-check
/**
 * Draws the avatar of a video-free session (`video=0`) on a `<canvas>`: the art the service serves
 * (`GET /media/v0/art/{avatar_id}`: the same SVG layers its renderer rasterises), moved by the animation
 * track (`viseme`, `face`, `head` messages stamped on the audio's media timeline), at the timeline instant
 * the player's audio clock says is being heard. `./player.js` uses it when given a `canvas`.
 *
 * Every layer is rasterised once, at the canvas's pixel size, into an `ImageBitmap`; a frame is a handful
 * of `drawImage` calls, redrawn only when the instant moves to the next 1/25 s or the mouth is cross-fading.
 * A transparent background (`bg_id: "transparent"`) draws nothing behind the avatar: the page shows
 * through. Format of the art and the messages: docs/media-plane.md#video-free-clients.
 *
 * @module
 */

/** How long the mouth takes to go from one viseme to the next (ms; the server co-articulates ≈ this). */
const CROSSFADE_MS = 40;
/** Frames per second drawn (the animation's own rate). */
const FPS = 25;
/** Animation messages kept behind the instant drawn (ms). */
const KEEP_MS = 2000;

/**
 * @typedef {object} AvatarDrawer
 * @property {(animation: { art_path?: string; bg_id?: string }) => void} configure The hello's `animation`: loads the art (once).
 * @property {(msg: { type: string; t_ms: number } & Record<string, any>) => void} push An animation message.
 * @property {(tMs: number) => void} interrupt Barge-in: visemes stamped after `tMs` are dropped.
 * @property {(tMs: number) => boolean} draw Draws the avatar at timeline instant `tMs`; true once drawn.
 * @property {() => boolean} ready Whether the art is loaded.
 * @property {() => { frames: number; visemes: number }} stats Frames drawn, viseme messages received.
 * @property {() => void} close
 */

/**
 * @param {{ canvas: HTMLCanvasElement; origin: string; fetch?: typeof fetch }} options `origin`: the
 *   service's http(s) origin (the media URL's).
 * @returns {AvatarDrawer}
 */
export function createAvatarDrawer(options) {
  const { canvas } = options;
  const doFetch = options.fetch ?? fetch;
  const ctx = /** @type {CanvasRenderingContext2D} */ (canvas.getContext("2d"));
  /** @type {null | { bg: ImageBitmap | null; body: ImageBitmap; head: ImageBitmap; eyes: Record<string, Record<string, ImageBitmap>>; mouths: Record<string, ImageBitmap>; scale: number }} */
  let art = null;
  /** @type {Promise<void> | null} */
  let loading = null;
  let closed = false;
  /** @type {[number, string][]} */
  let visemes = [];
  /** @type {[number, { state: string; eyes: string; look: string }][]} */
  let faces = [];
  /** @type {[number, number, number][]} */
  let heads = [];
  let lastKey = "";
  let frames = 0;
  let visemeCount = 0;

  /** @param {string} svg @param {number} w @param {number} h */
  const bitmap = async (svg, w, h) => {
    const img = new Image();
    img.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`;
    await img.decode();
    return await createImageBitmap(img, { resizeWidth: w, resizeHeight: h, resizeQuality: "high" });
  };

  /** @param {{ art_path?: string; bg_id?: string }} animation */
  const load = async (animation) => {
    const res = await doFetch(new URL(animation.art_path ?? "", options.origin).href);
    if (!res.ok) throw new Error(`the avatar's art answered ${res.status}`);
    const doc = await res.json();
    const w = canvas.width, h = canvas.height;
    const bgSvg = doc.backgrounds?.[animation.bg_id ?? ""] ?? null;
    /** @type {Record<string, Record<string, ImageBitmap>>} */
    const eyes = {};
    for (const [state, looks] of Object.entries(doc.eyes)) {
      eyes[state] = {};
      for (const [look, svg] of Object.entries(/** @type {Record<string, string>} */ (looks))) {
        eyes[state][look] = await bitmap(svg, w, h);
      }
    }
    /** @type {Record<string, ImageBitmap>} */
    const mouths = {};
    for (const [v, svg] of Object.entries(/** @type {Record<string, string>} */ (doc.mouths))) {
      mouths[v] = await bitmap(svg, w, h);
    }
    if (closed) return;
    art = {
      bg: bgSvg ? await bitmap(bgSvg, w, h) : null,
      body: await bitmap(doc.body, w, h),
      head: await bitmap(doc.head, w, h),
      eyes,
      mouths,
      scale: w / (doc.view_box?.[0] ?? 512),
    };
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

  return {
    configure(animation) {
      loading ??= load(animation).catch((err) => console.warn("avatar player: the art did not load", err));
    },
    push(msg) {
      if (typeof msg.t_ms !== "number") return;
      if (msg.type === "viseme") {
        visemeCount++;
        visemes.push([msg.t_ms, String(msg.viseme)]);
      } else if (msg.type === "face") {
        faces.push([msg.t_ms, { state: msg.state, eyes: msg.eyes, look: msg.look }]);
      } else if (msg.type === "head") heads.push([msg.t_ms, Number(msg.dx) || 0, Number(msg.dy) || 0]);
    },
    interrupt(tMs) {
      visemes = visemes.filter(([t]) => t <= tMs);
    },
    draw(tMs) {
      if (!art || closed) return false;
      const vi = lastAt(visemes, tMs);
      const viseme = vi >= 0 ? visemes[vi][1] : "sil";
      const since = vi >= 0 ? tMs - visemes[vi][0] : Infinity;
      const prev = vi > 0 ? visemes[vi - 1][1] : "sil";
      const fading = since < CROSSFADE_MS && prev !== viseme;
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
      const key = `${frame}/${viseme}/${face.eyes}/${face.look}`;
      if (key === lastKey && !fading) return true;
      lastKey = key;
      const s = art.scale;
      ctx.clearRect(0, 0, canvas.width, canvas.height);
      if (art.bg) ctx.drawImage(art.bg, 0, 0);
      ctx.drawImage(art.body, 0, 0);
      ctx.save();
      ctx.translate(Math.round(dx * s), Math.round(dy * s));
      ctx.drawImage(art.head, 0, 0);
      const eyes = art.eyes[face.eyes]?.[face.look] ?? art.eyes.open.neutral;
      ctx.drawImage(eyes, 0, 0);
      const mouth = art.mouths[viseme] ?? art.mouths.sil;
      if (fading && art.mouths[prev]) {
        const a = since / CROSSFADE_MS;
        ctx.globalAlpha = 1 - a;
        ctx.drawImage(art.mouths[prev], 0, 0);
        ctx.globalAlpha = a;
      }
      ctx.drawImage(mouth, 0, 0);
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
    ready: () => art !== null,
    stats: () => ({ frames, visemes: visemeCount }),
    close() {
      closed = true;
      if (!art) return;
      for (const b of [art.bg, art.body, art.head, ...Object.values(art.mouths)]) b?.close();
      for (const looks of Object.values(art.eyes)) for (const b of Object.values(looks)) b.close();
      art = null;
    },
  };
}
