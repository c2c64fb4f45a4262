/**
 * The demo page's HTML and script (served at `/demo` and `/demo/app.js`). The script uses only the
 * demo backend's routes and the SDK's player; it never sees an API key. The vendor engines it offers, and
 * the fields it asks for each, come from the provider definitions (`demo` of each entry).
 *
 * @module
 */
import { demoOffers } from "../providers/definitions/provider_types.ts";
import { TRANSPORT_KINDS, transportEntry } from "../vocabulary/transports.ts";
import {
  ACCESSORIES,
  BROW_STYLES,
  CLOTHING_STYLES,
  EYE_SHAPES,
  FACE_SHAPES,
  FACIAL_HAIR,
  GLASSES,
  HAIR_STYLES,
  STYLE_DEFAULTS,
} from "../vocabulary/avatar_style.ts";

/** The avatar maker's choices (docs/avatars.md): one menu per listed parameter, one picker per colour. */
const MAKER_MENUS: [string, readonly string[]][] = [
  ["face_shape", FACE_SHAPES],
  ["hair_style", HAIR_STYLES],
  ["eye_shape", EYE_SHAPES],
  ["brow_style", BROW_STYLES],
  ["glasses", GLASSES],
  ["facial_hair", FACIAL_HAIR],
  ["clothing_style", CLOTHING_STYLES],
  ["accessory", ACCESSORIES],
];
const MAKER_COLOURS = [
  "skin_color",
  "hair_color",
  "eye_color",
  "lip_color",
  "clothing_color",
  "accessory_color",
] as const;
const MAKER_FIELDS = MAKER_MENUS.map(([name, values]) =>
  `      <label for="mk_${name}">${name}</label><select id="mk_${name}" class="mk">${
    values.map((v) =>
      `<option value="${v}"${
        (STYLE_DEFAULTS as Record<string, unknown>)[name] === v ? " selected" : ""
      }>${v}</option>`
    ).join("")
  }</select>`
).concat(
  MAKER_COLOURS.map((name) =>
    `      <label for="mk_${name}">${name}</label><input type="color" id="mk_${name}" class="mk" value="${
      STYLE_DEFAULTS[name]
    }">`
  ),
  [`      <label><input type="checkbox" id="mk_freckles" class="mk"> freckles</label>`],
).join("\n");

/** The engine menu's vendor options, from the provider definitions. */
const VENDOR_OPTIONS = demoOffers().map((o) =>
  `      <option value="${o.type}">${o.type}: ${o.label}</option>`
)
  .join("\n");

/** The transport menu's options after `auto`, from the transport registry. */
const TRANSPORT_OPTIONS = TRANSPORT_KINDS.map((k) =>
  `      <option value="${k}">${transportEntry(k).label}</option>`
).join("\n");

/** The fields each engine takes on the page, as the script's object literal (from the provider definitions). */
const ENGINE_FIELDS_SOURCE = [
  "  reference: [],",
  ...demoOffers().map((o) =>
    `  ${o.type}: [${
      o.fields.map((f) =>
        `[${JSON.stringify(f.field)}, ${JSON.stringify(f.label)}, ${JSON.stringify(f.input)}]`
      ).join(", ")
    }],`
  ),
].join("\n");

/** The page. */
export const DEMO_PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Avatar session demo</title>
<link rel="icon" href="/demo/favicon.svg" type="image/svg+xml">
<style>
  :root { color-scheme: light dark; font-family: system-ui, sans-serif; }
  body { margin: 0; display: grid; place-items: start center; min-height: 100vh; background: #15181d; color: #e8eaed; }
  main { display: grid; grid-template-columns: minmax(0, 512px) 300px; gap: 24px; padding: 24px; max-width: 900px; }
  @media (max-width: 860px) { main { grid-template-columns: 1fr; } }
  video { width: 100%; aspect-ratio: 1; background: #0b0d10; border-radius: 12px; display: block; }
  /* Video-free: the browser draws the avatar on a canvas; a transparent background shows the page's. */
  #canvas { width: 100%; aspect-ratio: 1; display: none; border-radius: 12px;
    background: repeating-linear-gradient(45deg, #22303c 0 16px, #1b2530 16px 32px); }
  .videofree #canvas { display: block; } .videofree video { display: none; }
  h1 { font-size: 1.2rem; margin: 0 0 12px; }
  h2 { font-size: .95rem; margin: 12px 0 0; color: #aab; font-weight: 600; }
  label { display: block; font-size: .85rem; margin: 8px 0 4px; color: #aab; }
  select, button, input[type=text], input[type=password] { font: inherit; box-sizing: border-box; padding: 8px 12px; border-radius: 8px; border: 1px solid #3a404a; background: #232830; color: inherit; width: 100%; }
  button { cursor: pointer; margin-top: 10px; }
  button.primary { background: #2f6fdb; border-color: #2f6fdb; }
  button.danger { background: #b8363f; border-color: #b8363f; }
  button:disabled { opacity: .45; cursor: default; }
  dl { display: grid; grid-template-columns: auto 1fr; gap: 4px 12px; font-size: .9rem; margin: 16px 0; }
  dt { color: #aab; } dd { margin: 0; font-variant-numeric: tabular-nums; }
  #log { font-size: .85rem; max-height: 180px; overflow: auto; border-top: 1px solid #2a2f37; padding-top: 8px; }
  #log p { margin: 4px 0; } #log .agent { color: #9ecbff; } #log .user { color: #c3e88d; }
  .note { font-size: .8rem; color: #889; }
</style>
</head>
<body>
<main>
  <section>
    <video id="video" playsinline></video>
    <canvas id="canvas" width="512" height="512"></canvas>
  </section>
  <aside>
    <h1>Talk to an avatar</h1>
    <label for="engine">Conversation engine</label>
    <select id="engine">
      <option value="reference" selected>Reference engine (built in)</option>
${VENDOR_OPTIONS}
    </select>
    <div id="creds"></div>
    <label for="avatar">Avatar</label><select id="avatar"></select>
    <label for="bg">Background</label><select id="bg"></select>
    <label for="mode">Picture</label>
    <select id="mode">
      <option value="video" selected>Video (the service renders and encodes)</option>
      <option value="free">Video-free (this page draws the avatar: over the media socket or WebRTC)</option>
    </select>
    <label for="transport">Transport</label>
    <select id="transport">
      <option value="auto" selected>auto (WebRTC when the service has an SFU)</option>
${TRANSPORT_OPTIONS}
    </select>
    <details id="maker">
      <summary>Avatar maker</summary>
      <img id="mk_preview" width="160" height="160" alt="preview of the style">
${MAKER_FIELDS}
      <label for="mk_name">name</label><input id="mk_name" value="My avatar" maxlength="100">
      <button id="mk_use">Use this avatar</button>
      <label for="mk_svg">…or upload a layered SVG drawing (docs/avatars.md)</label>
      <input type="file" id="mk_svg" accept=".svg,image/svg+xml">
      <p id="mk_state"></p>
    </details>
    <label><input type="checkbox" id="mic" checked> Use my microphone</label>
    <button id="start" class="primary">Start</button>
    <button id="end" class="danger" disabled>End</button>
    <dl>
      <dt>State</dt><dd id="state">idle</dd>
      <dt>First frame</dt><dd id="ttff">–</dd>
      <dt>Playback</dt><dd id="playback">–</dd>
      <dt>Delay</dt><dd id="latency">–</dd>
      <dt>Mouth vs sound</dt><dd id="avoffset">–</dd>
      <dt>Stalls</dt><dd id="stalls">–</dd>
      <dt>Frames</dt><dd id="frames">–</dd>
      <dt>Microphone</dt><dd id="micstate">–</dd>
      <dt>Session</dt><dd id="session">–</dd>
    </dl>
    <h2>This session's figures</h2>
    <dl id="figures">
      <dt>Turn (you stop → avatar)</dt><dd id="turn">–</dd>
      <dt>engine's share</dt><dd id="turn_engine">–</dd>
      <dt>avatar's share</dt><dd id="turn_avatar">–</dd>
      <dt>Frame made → shown</dt><dd id="frame_latency">–</dd>
    </dl>
    <div id="log"></div>
    <p class="note">The reference engine plays back what you say. For a vendor engine, paste the
      short-lived credential your backend minted (see docs/providers.md); it goes to this page's backend for
      the session's creation only. This page gets only a client token and the session's stream metadata back;
      the API key stays on the server.</p>
  </aside>
</main>
<script type="module" src="/demo/app.js"></script>
</body>
</html>
`;

/** The page's icon (an avatar's face), so browsers do not ask for a missing `/favicon.ico`. */
export const DEMO_FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64">
<rect width="64" height="64" rx="14" fill="#2f6fdb"/>
<circle cx="32" cy="28" r="15" fill="#f2c9a5"/>
<path d="M17 27c0-10 7-16 15-16s15 6 15 16c-4-5-9-7-15-7s-11 2-15 7z" fill="#3b2a20"/>
<circle cx="26" cy="29" r="2" fill="#222"/><circle cx="38" cy="29" r="2" fill="#222"/>
<path d="M27 35q5 4 10 0" stroke="#9b3b3b" stroke-width="2" fill="none" stroke-linecap="round"/>
<path d="M12 58c2-9 10-14 20-14s18 5 20 14z" fill="#3f9e6e"/>
</svg>
`;

/** The page's script. */
export const DEMO_APP_JS = `import { createPlayer } from "/sdk/player.js";

const $ = (id) => document.getElementById(id);
const api = async (method, path, body) => {
  const res = await fetch("/demo/api" + path, {
    method,
    headers: { "x-demo": "1", ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = await res.json();
  if (!res.ok) throw new Error(json.code ? json.code + ": " + json.message : "HTTP " + res.status);
  return json;
};

/** The fields each vendor engine takes on this page (browser-safe credentials only: never an API key). */
const ENGINE_FIELDS = {
${ENGINE_FIELDS_SOURCE}
};
const showFields = () => {
  $("creds").textContent = "";
  for (const [name, label, type] of ENGINE_FIELDS[$("engine").value]) {
    const l = document.createElement("label");
    l.textContent = label;
    const input = document.createElement("input");
    input.type = type;
    input.id = "cred_" + name;
    input.autocomplete = "off";
    l.htmlFor = input.id;
    $("creds").append(l, input);
  }
};
$("engine").addEventListener("change", showFields);
showFields();
const engineChoice = () => {
  const engine = $("engine").value;
  const fields = {};
  for (const [name] of ENGINE_FIELDS[engine]) {
    const v = $("cred_" + name).value.trim();
    if (v) fields[name] = v;
  }
  return engine === "reference" ? {} : { provider_type: engine, provider_fields: fields };
};

let player = null;
let session = null;
let statsTimer = null;
let figuresTimer = null;

/** "p50 / p95 ms (n)" of a figure of the service's metrics, or "–". */
const figure = (f) => f && f.count ? f.p50 + " / " + f.p95 + " ms (" + f.count + ")" : "–";

const log = (cls, text) => {
  const p = document.createElement("p");
  p.className = cls;
  p.textContent = text;
  $("log").prepend(p);
};

const setState = (s) => {
  $("state").textContent = s.state + (s.reason && s.state !== "playing" ? " (" + s.reason + ")" : "") +
    (s.muted ? " – muted by autoplay, click the video" : "");
  if (s.ttffMs !== null) $("ttff").textContent = s.ttffMs + " ms";
  // A refused (or missing) microphone: say so, and untick the box that asked for it.
  if (s.microphoneError) $("mic").checked = false;
  $("micstate").textContent = s.microphone ? "on" : s.microphoneError ? "off: " + s.microphoneError : "off";
  if (s.state === "ended" || s.state === "failed") finish();
};

const finish = () => {
  clearInterval(statsTimer);
  clearInterval(figuresTimer);
  $("start").disabled = false;
  $("end").disabled = true;
};

const catalog = await api("GET", "/catalog");
for (const [sel, list, def] of [["avatar", catalog.avatars, catalog.default_avatar_id], ["bg", catalog.backgrounds, catalog.default_bg_id]]) {
  for (const item of list) {
    const o = new Option(item.name, item.id, false, item.id === def);
    o.title = item.description;
    $(sel).add(o);
  }
}

$("video").addEventListener("click", () => { $("video").muted = false; });

// The avatar maker: the style's live preview (drawn by the service, not stored), "use this avatar" (a
// project avatar, picked for the next session) and the upload of a drawing.
const makerStyle = () => {
  const style = {};
  for (const el of document.querySelectorAll(".mk")) {
    const name = el.id.slice(3);
    style[name] = el.type === "checkbox" ? el.checked : el.value;
  }
  return style;
};
let previewUrl = null;
let previewTimer = null;
const refreshPreview = () => {
  clearTimeout(previewTimer);
  previewTimer = setTimeout(async () => {
    const res = await fetch("/demo/api/avatar-preview", {
      method: "POST",
      headers: { "x-demo": "1", "content-type": "application/json" },
      body: JSON.stringify({ style: makerStyle() }),
    });
    if (!res.ok) return void ($("mk_state").textContent = "preview: HTTP " + res.status);
    if (previewUrl) URL.revokeObjectURL(previewUrl);
    previewUrl = URL.createObjectURL(await res.blob());
    $("mk_preview").src = previewUrl;
  }, 120);
};
for (const el of document.querySelectorAll(".mk")) el.addEventListener("input", refreshPreview);
$("maker").addEventListener("toggle", () => { if ($("maker").open) refreshPreview(); });
const useAvatar = (made) => {
  const o = new Option(made.name + " (" + made.source + ")", made.avatar_id, true, true);
  $("avatar").add(o);
  $("avatar").value = made.avatar_id;
  $("mk_state").textContent = "Made " + made.avatar_id + ": picked for the next session.";
};
$("mk_use").addEventListener("click", async () => {
  try {
    useAvatar(await api("POST", "/avatars", { name: $("mk_name").value, style: makerStyle() }));
  } catch (err) {
    $("mk_state").textContent = "refused: " + err.message;
  }
});
$("mk_svg").addEventListener("change", async () => {
  const file = $("mk_svg").files[0];
  if (!file) return;
  try {
    useAvatar(await api("POST", "/avatars", { name: file.name.replace(".svg", ""), svg: await file.text() }));
  } catch (err) {
    $("mk_state").textContent = "refused: " + err.message;
  }
});

$("start").addEventListener("click", async () => {
  $("start").disabled = true;
  $("log").textContent = "";
  $("ttff").textContent = "–";
  try {
    // Video-free over either transport: the sound and the animation track (on WebRTC, a data channel).
    const free = $("mode").value === "free";
    document.body.classList.toggle("videofree", free);
    session = await api("POST", "/sessions", {
      avatar_id: $("avatar").value, bg_id: $("bg").value,
      transport: $("transport").value, ...engineChoice(),
    });
  } catch (err) {
    $("state").textContent = "could not start: " + err.message;
    $("start").disabled = false;
    return;
  }
  $("session").textContent = session.session_id.slice(0, 18) + "…";
  $("end").disabled = false;
  log("note", "Transport: " + session.transport);
  player = createPlayer({
    ...($("mode").value === "free" ? { canvas: $("canvas") } : { video: $("video") }),
    streamMetadata: session.stream_metadata,
    clientToken: session.client_token,
    microphone: $("mic").checked,
    refreshToken: async () => {
      const t = await api("POST", "/sessions/" + encodeURIComponent(session.session_id) + "/token");
      return { clientToken: t.client_token, streamMetadata: t.stream_metadata };
    },
    onState: setState,
    onTranscript: (line) => { if (line.final) log(line.role, (line.role === "agent" ? "Avatar: " : "You: ") + line.text); },
    // The agent's tool calls (the reference engine run with --demo-tool get_local_time, a vendor agent's
    // client tools): get_local_time answers the page's time; any other tool is answered as unknown.
    onToolCall: (call) => {
      log("note", "Tool call: " + call.name + " " + JSON.stringify(call.arguments));
      if (call.name === "get_local_time") return new Date().toLocaleTimeString();
      throw new Error("this page has no tool named " + call.name);
    },
  });
  window.demoPlayer = player;
  // What the player measures, live (it also reports it to the service).
  statsTimer = setInterval(() => {
    const st = player.stats();
    $("playback").textContent = st.playback;
    $("latency").textContent = st.latencyMs + " ms (frame made → shown)";
    $("avoffset").textContent = st.avOffsetMs === null ? "–" : (st.avOffsetMs > 0 ? "+" : "") + st.avOffsetMs + " ms" + (st.avOffsetMs > 0 ? " (picture late)" : "");
    $("stalls").textContent = st.stalls + (st.catchUps ? ", " + st.catchUps + " caught up" + (st.lastCatchUpMs !== null ? " (last in " + st.lastCatchUpMs + " ms)" : "") : "");
    $("frames").textContent = st.framesDecoded + " decoded, " + st.framesDropped + " dropped";
  }, 500);
  // The session's figures as the service keeps them (turns: the engine's share and the avatar's).
  const sessionId = session.session_id;
  figuresTimer = setInterval(async () => {
    try {
      const m = await api("GET", "/sessions/" + encodeURIComponent(sessionId) + "/metrics");
      $("turn").textContent = figure(m.turn_latency_ms);
      $("turn_engine").textContent = figure(m.engine_latency_ms);
      $("turn_avatar").textContent = figure(m.avatar_latency_ms);
      $("frame_latency").textContent = figure(m.frame_latency_ms);
    } catch { /* the next poll tries again */ }
  }, 2000);
});

$("mic").addEventListener("change", () => player?.setMicrophone($("mic").checked));

$("end").addEventListener("click", async () => {
  $("end").disabled = true;
  try {
    const ended = await api("POST", "/sessions/" + encodeURIComponent(session.session_id) + "/end");
    $("session").textContent = ended.status + ", " + ended.duration_s + " s, " + ended.chunks_rendered + " chunks";
  } catch (err) {
    $("session").textContent = "end failed: " + err.message;
  }
  player?.close();
  finish();
});
`;
