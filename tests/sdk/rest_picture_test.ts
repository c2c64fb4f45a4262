/**
 * The canvas player's first picture is the avatar at rest in one SVG document (`restPictureSvg`): the layers
 * nested as they are when nothing in one can reach another (no id defined twice, no `<style>`), else each an
 * `<image>` of its own document. That the picture is the same pixels as the layered drawing is tested in a
 * browser (`avatar_canvas_browser_test.ts`).
 */
import assert from "node:assert/strict";

const { restPictureSvg } = await import(new URL("../../sdk/avatar_canvas.js", import.meta.url).href);

const svg = (inner: string) =>
  `<svg xmlns="http://www.w3.org/2000/svg" width="512" height="512" viewBox="0 0 512 512">${inner}</svg>`;
const BODY = svg(
  `<defs><linearGradient id="shirt"><stop offset="0" stop-color="#0a0"/></linearGradient></defs>` +
    `<rect x="100" y="400" width="312" height="112" fill="url(#shirt)"/>`,
);
const HEAD = svg(
  `<defs><radialGradient id="face"><stop offset="0" stop-color="#fc9"/></radialGradient></defs>` +
    `<circle cx="256" cy="220" r="120" fill="url(#face)"/>`,
);
const MOUTH = svg(`<path d="M230 300 L282 300" stroke="#a33"/>`);

Deno.test("restPictureSvg: layers whose ids are all different are nested in one document, in order", () => {
  const out: string = restPictureSvg([BODY, HEAD, MOUTH]);
  assert.ok(out.startsWith(`<svg xmlns="http://www.w3.org/2000/svg" width="512" height="512"`), out);
  assert.ok(!out.includes("<image"), out);
  const at = [BODY, HEAD, MOUTH].map((l) => out.indexOf(l));
  assert.ok(at.every((i) => i > 0), "every layer whole");
  assert.deepEqual([...at].sort((a, b) => a - b), at, "in drawing order");
});

Deno.test("restPictureSvg: an id defined in two layers makes each layer a document of its own", () => {
  // The head's `url(#face)` would resolve to the body's red `face` in one document.
  const body = svg(
    `<defs><linearGradient id="face"><stop offset="0" stop-color="#f00"/></linearGradient></defs>` +
      `<rect width="512" height="512" fill="url(#face)"/>`,
  );
  const out: string = restPictureSvg([body, HEAD, MOUTH]);
  const images = [...out.matchAll(/<image x="0" y="0" width="512" height="512" href="([^"]*)"\/>/g)];
  assert.equal(images.length, 3, out);
  const prefix = "data:image/svg+xml;charset=utf-8,";
  assert.deepEqual(images.map((m) => decodeURIComponent(m[1].slice(prefix.length))), [body, HEAD, MOUTH]);
  // Only the images' own documents define anything.
  assert.ok(!/\sid="/.test(out.replace(/href="[^"]*"/g, "")), out);
});

Deno.test("restPictureSvg: a layer with a style sheet makes each layer a document of its own", () => {
  const styled = svg(`<style>path{stroke:#00f}</style><rect width="10" height="10"/>`);
  const out: string = restPictureSvg([styled, HEAD, MOUTH]);
  assert.equal([...out.matchAll(/<image /g)].length, 3, out);
  assert.ok(!out.includes("<style"), "the style sheet only inside its own document");
});

Deno.test("restPictureSvg: the same id twice within one layer is that layer's own affair", () => {
  const twice = svg(`<g id="a"/><g id="a"/>`);
  assert.ok(!restPictureSvg([twice, HEAD]).includes("<image"));
});
