/**
 * The hostile-drawing suite: malicious or broken SVG drawings, each refused with a message naming what (the
 * API answers it as 400 SVC_INVALID_AVATAR), or accepted without the offending part. Whatever is accepted is
 * checked again for anything that could run or fetch: nothing of it may reach the stored and served text.
 */
import assert from "node:assert/strict";
import { acceptSvg } from "../../src/avatar_svg/accept.ts";
import { SVG_LIMITS } from "../../src/avatar_svg/limits.ts";
import { SvgRefusal } from "../../src/avatar_svg/refusal.ts";

const NS = `xmlns="http://www.w3.org/2000/svg"`;
const XL = `xmlns:xlink="http://www.w3.org/1999/xlink"`;
const MOUTH = `<rect id="mouth" x="40" y="60" width="20" height="10" fill="#a03040"/>`;
/** A drawing with a valid rig around `inner`. */
const rigged = (inner: string, rootAttrs = "") =>
  `<svg ${NS} ${XL} viewBox="0 0 100 100"${rootAttrs}>${inner}${MOUTH}</svg>`;

const PNG_1PX =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/** [name, drawing, expectation]: a string = refused with a message containing it; null = accepted. */
const CASES: [string, string, string | null][] = [
  // Scripts everywhere a browser runs them.
  ["script element", rigged(`<script>alert(1)</script>`), "<script>"],
  ["script with src", rigged(`<script href="https://evil.example/x.js"/>`), "<script>"],
  [
    "script in xhtml namespace",
    rigged(`<h:script xmlns:h="http://www.w3.org/1999/xhtml">alert(1)</h:script>`),
    "<script>",
  ],
  ["script in CDATA", rigged(`<script><![CDATA[alert(1)]]></script>`), "<script>"],
  ["script nested in defs", rigged(`<defs><g><script>alert(1)</script></g></defs>`), "<script>"],
  ["script inside dropped metadata", rigged(`<metadata><script>alert(1)</script></metadata>`), "<script>"],
  ["onload on root", `<svg ${NS} viewBox="0 0 100 100" onload="alert(1)">${MOUTH}</svg>`, "onload"],
  ["onclick on rect", rigged(`<rect width="5" height="5" onclick="alert(1)"/>`), "onclick"],
  ["ONMOUSEOVER upper case", rigged(`<g ONMOUSEOVER="alert(1)"/>`), "ONMOUSEOVER"],
  ["onbegin on an element", rigged(`<circle r="4" onbegin="alert(1)"/>`), "onbegin"],
  ["namespaced on attribute", rigged(`<g xmlns:x="urn:x" x:onload="alert(1)"/>`), "onload"],
  ["javascript: href on use", rigged(`<use href="javascript:alert(1)"/>`), "external reference"],
  ["javascript: xlink:href on use", rigged(`<use xlink:href="javascript:alert(1)"/>`), "external reference"],
  ["link element a", rigged(`<a href="javascript:alert(1)"><rect width="9" height="9"/></a>`), "<a>"],
  [
    "animate rewriting href",
    rigged(`<use href="#x"><set attributeName="href" to="javascript:alert(1)"/></use>`),
    "<set>",
  ],
  [
    "animate element",
    rigged(`<rect width="5" height="5"><animate attributeName="x" values="0;5" dur="1s"/></rect>`),
    "<animate>",
  ],
  [
    "animateTransform",
    rigged(`<g><animateTransform attributeName="transform" type="rotate"/></g>`),
    "<animateTransform>",
  ],
  [
    "foreignObject with html",
    rigged(
      `<foreignObject><body xmlns="http://www.w3.org/1999/xhtml"><img src="x" onerror="alert(1)"/></body></foreignObject>`,
    ),
    "<foreignObject>",
  ],
  ["iframe in svg namespace", rigged(`<iframe src="https://evil.example"/>`), "<iframe>"],
  ["embed element", rigged(`<embed src="x.swf"/>`), "<embed>"],
  ["handler element", rigged(`<handler type="application/ecmascript">alert(1)</handler>`), "<handler>"],
  // External references in every attribute and CSS form.
  ["external use", rigged(`<use href="https://evil.example/s.svg#a"/>`), "external reference"],
  ["external use via xlink", rigged(`<use xlink:href="other.svg#a"/>`), "external reference"],
  [
    "external image",
    rigged(`<image href="https://evil.example/p.png" width="5" height="5"/>`),
    "embedded PNG or JPEG",
  ],
  [
    "svg data image",
    rigged(`<image href="data:image/svg+xml;base64,PHN2Zy8+" width="5" height="5"/>`),
    "embedded PNG or JPEG",
  ],
  [
    "png label with non-png bytes",
    rigged(`<image href="data:image/png;base64,PHN2Zy8+AAAA" width="5" height="5"/>`),
    "not a PNG",
  ],
  [
    "oversized embedded png",
    rigged(
      `<image href="data:image/png;base64,${"A".repeat(Math.ceil(SVG_LIMITS.maxImageBytes / 3) * 4 + 8)}"/>`,
    ),
    "over",
  ],
  [
    "feImage fetch",
    rigged(`<filter id="f"><feImage href="https://evil.example/x.png"/></filter>`),
    "<feImage>",
  ],
  [
    "fill url external",
    rigged(`<rect width="5" height="5" fill="url(https://evil.example/g.svg#g)"/>`),
    "external reference",
  ],
  [
    "fill url external quoted",
    rigged(`<rect width="5" height="5" fill="url('//evil.example/g#g')"/>`),
    "external reference",
  ],
  ["filter url external", rigged(`<g filter="url(x.svg#f)"/>`), "external reference"],
  [
    "style attr url external",
    rigged(`<rect width="5" height="5" style="fill:url(https://evil.example/a)"/>`),
    "external reference",
  ],
  [
    "style attr css escape",
    rigged(`<rect width="5" height="5" style="fill:\\75 rl(https://evil.example/a)"/>`),
    "escapes",
  ],
  [
    "style attr expression",
    rigged(`<rect width="5" height="5" style="width:expression(alert(1))"/>`),
    "expression",
  ],
  ["style element @import", rigged(`<style>@import url(https://evil.example/a.css);</style>`), "at-rules"],
  [
    "style element @font-face",
    rigged(`<style>@font-face{font-family:x;src:url(https://e.example/f.woff)}</style>`),
    "at-rules",
  ],
  [
    "style element url external",
    rigged(`<style>rect{fill:url(https://evil.example/p)}</style>`),
    "external reference",
  ],
  ["style element escapes", rigged(`<style>rect{fill:\\000075rl(x)}</style>`), "escapes"],
  ["style element comment", rigged(`<style>/* x */ rect{fill:red}</style>`), "comments"],
  [
    "xml-stylesheet PI",
    `<?xml-stylesheet href="https://evil.example/a.css"?>${rigged("")}`,
    "processing instruction",
  ],
  // Entities and DTDs.
  [
    "billion laughs",
    `<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>${
      rigged("<text>&b;</text>")
    }`,
    "DOCTYPE",
  ],
  [
    "external entity",
    `<!DOCTYPE svg [<!ENTITY x SYSTEM "file:///etc/passwd">]>${rigged("<text>&x;</text>")}`,
    "DOCTYPE",
  ],
  ["undefined entity", rigged("<text>&nbsp;</text>"), "not well-formed"],
  [
    "public DTD",
    `<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">${
      rigged("")
    }`,
    "DOCTYPE",
  ],
  // Enormous or deeply nested drawings.
  [
    "over the byte limit",
    rigged(`<path d="M0 0 L1 1"/>`.repeat(1) + " ".repeat(SVG_LIMITS.maxBytes)),
    "bytes",
  ],
  [
    "too many elements",
    rigged(`<rect width="1" height="1"/>`.repeat(SVG_LIMITS.maxElements + 1)),
    "elements",
  ],
  [
    "deep nesting",
    rigged("<g>".repeat(SVG_LIMITS.maxDepth + 1) + "</g>".repeat(SVG_LIMITS.maxDepth + 1)),
    "nested deeper",
  ],
  ["huge path data", rigged(`<path d="M0 0${" L1 1".repeat(SVG_LIMITS.maxPathData / 4)}"/>`), "path data"],
  [
    "path data total",
    rigged(`<path d="M0 0${" L1 1".repeat(SVG_LIMITS.maxPathData / 5 - 2)}"/>`.repeat(4)),
    "path data in all",
  ],
  [
    "too many images",
    rigged(`<image href="data:image/png;base64,${PNG_1PX}"/>`.repeat(SVG_LIMITS.maxImages + 1)),
    "images",
  ],
  // Malformed XML.
  ["unclosed tag", `<svg ${NS} viewBox="0 0 100 100">${MOUTH}`, "not well-formed"],
  ["mismatched tags", `<svg ${NS} viewBox="0 0 100 100">${MOUTH}<g></rect></svg>`, "not well-formed"],
  ["two roots", `${rigged("")}<svg ${NS}/>`, "not well-formed"],
  ["duplicate attribute", rigged(`<rect width="1" width="2"/>`), "not well-formed"],
  ["not xml at all", "hello, I am a drawing", "not well-formed"],
  ["empty text", "", "root element"],
  ["html root", `<html><body>${MOUTH}</body></html>`, "root element"],
  ["svg without namespace", `<svg viewBox="0 0 100 100">${MOUTH}</svg>`, "root element"],
  // Wrong rig.
  ["no viewBox", `<svg ${NS}>${MOUTH}</svg>`, "viewBox"],
  ["zero viewBox", `<svg ${NS} viewBox="0 0 0 100">${MOUTH}</svg>`, "viewBox"],
  ["no mouth", `<svg ${NS} viewBox="0 0 100 100"><rect width="5" height="5"/></svg>`, 'id="mouth"'],
  [
    "mouth is a path",
    `<svg ${NS} viewBox="0 0 100 100"><path id="mouth" d="M0 0 L5 5"/></svg>`,
    "<rect> or an <ellipse>",
  ],
  ["two mouths", rigged(`<rect id="mouth" width="5" height="5"/>`), "used 2 times"],
  [
    "mouth outside viewBox",
    `<svg ${NS} viewBox="0 0 100 100"><rect id="mouth" x="90" y="90" width="20" height="20"/></svg>`,
    "not inside",
  ],
  [
    "mouth under a transform",
    `<svg ${NS} viewBox="0 0 100 100"><g transform="scale(2)"><rect id="mouth" x="9" y="9" width="2" height="2"/></g></svg>`,
    "transform",
  ],
  [
    "mouth fill not a colour",
    `<svg ${NS} viewBox="0 0 100 100"><rect id="mouth" x="9" y="9" width="2" height="2" fill="url(#g)"/></svg>`,
    "#rgb or #rrggbb",
  ],
  ["eyes-closed without eyes-open", rigged(`<g id="eyes-closed"/>`), "eyes-open"],
  ["eyes-open not a group", rigged(`<rect id="eyes-open" width="2" height="2"/>`), "must be a <g>"],
  // Accepted without the offending (inert) part.
  [
    "editor metadata dropped",
    rigged(`<metadata><rdf:RDF xmlns:rdf="urn:rdf"/></metadata><title>t</title>`),
    null,
  ],
  [
    "inkscape attributes dropped",
    rigged(`<g xmlns:inkscape="http://www.inkscape.org/namespaces/inkscape" inkscape:label="Layer"/>`),
    null,
  ],
  ["unknown element dropped", rigged(`<blink><rect width="4" height="4"/></blink>`), null],
  [
    "unknown css property dropped",
    rigged(`<rect width="5" height="5" style="fill:#123456;behavior:x"/>`),
    null,
  ],
  ["data attribute dropped", rigged(`<rect width="5" height="5" data-x="javascript-free"/>`), null],
  ["xml:base dropped", rigged(`<g xml:base="https://evil.example/"><use href="#mouth"/></g>`), null],
  [
    "embedded png kept",
    rigged(`<image href="data:image/png;base64,${PNG_1PX}" width="5" height="5"/>`),
    null,
  ],
  [
    "local url kept",
    rigged(
      `<defs><linearGradient id="g"><stop offset="0" stop-color="#fff"/></linearGradient></defs><rect width="5" height="5" fill="url(#g)"/>`,
    ),
    null,
  ],
];

/** What must never be in a stored or served drawing. */
const NEVER = [
  /<script/i,
  /\son\w+=/i,
  /javascript:/i,
  /https?:(?!\/\/www\.w3\.org\/2000\/svg")/i,
  /foreignObject/i,
  /@import/i,
  /<!DOCTYPE/i,
  /<!ENTITY/i,
  /data:(?!image\/(png|jpeg);base64)/i,
  /xml:base/i,
  /behavior/i,
  /<metadata/i,
  /inkscape/i,
  /<blink/i,
  /data-x/,
];

Deno.test(`hostile drawings: ${CASES.length} cases, each refused naming what or accepted without it`, () => {
  assert.ok(CASES.length >= 40);
  for (const [name, drawing, expected] of CASES) {
    if (expected === null) {
      const a = acceptSvg(drawing);
      for (const re of NEVER) {
        assert.ok(!re.test(a.svg), `${name}: served text matches ${re}: ${a.svg.slice(0, 300)}`);
      }
      // What is stored is stable: accepting it again changes nothing.
      assert.equal(acceptSvg(a.svg).svg, a.svg, name);
      continue;
    }
    assert.throws(
      () => acceptSvg(drawing),
      (e) => {
        assert.ok(e instanceof SvgRefusal, `${name}: threw ${e}`);
        assert.ok(e.message.includes(expected), `${name}: "${e.message}" does not name "${expected}"`);
        return true;
      },
      name,
    );
  }
});

Deno.test("hostile drawings: what was dropped is listed", () => {
  const a = acceptSvg(
    rigged(`<metadata/><rect width="5" height="5" data-x="1" style="fill:#123456;cursor:pointer"/>`),
  );
  assert.ok(a.dropped.includes("element <metadata>"), a.dropped.join());
  assert.ok(a.dropped.includes("attribute data-x"), a.dropped.join());
  assert.ok(a.dropped.includes("CSS property cursor"), a.dropped.join());
  assert.ok(a.svg.includes('style="fill:#123456"'));
});

Deno.test("rig: viewBox, mouth box and lip colour, optional groups", () => {
  const a = acceptSvg(
    `<svg ${NS} viewBox="-10 0 200 100"><g id="head"><g id="eyes-open"/><g id="eyes-closed"/><g id="brows"/>` +
      `<ellipse id="mouth" cx="90" cy="70" rx="15" ry="6" style="fill:#C36"/></g></svg>`,
  );
  assert.deepEqual(a.rig.viewBox, [-10, 0, 200, 100]);
  assert.deepEqual(a.rig.mouth, { x: 75, y: 64, width: 30, height: 12 });
  assert.equal(a.rig.lips, "#cc3366");
  assert.deepEqual([a.rig.eyesOpen, a.rig.eyesClosed, a.rig.brows, a.rig.head], [true, true, true, true]);
  const plain = acceptSvg(rigged(""));
  assert.deepEqual([plain.rig.eyesOpen, plain.rig.eyesClosed, plain.rig.brows, plain.rig.head], [
    false,
    false,
    false,
    false,
  ]);
});
