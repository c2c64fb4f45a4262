/**
 * A video-free client's hello carries the avatar's art document when it is small (`inlineArt`): a stock
 * avatar's always, a customer's drawing of several MB never (it would hold up the sound behind it).
 */
import assert from "node:assert/strict";
import { ART_INLINE_MAX_BYTES, artDocument, inlineArt } from "../../src/media/art/document.ts";
import { CATALOG } from "../../src/media/catalog.ts";

const bytes = (doc: unknown) => new TextEncoder().encode(JSON.stringify(doc)).length;

Deno.test("inlineArt: every stock avatar's art goes in the hello", () => {
  for (const a of CATALOG.avatars) {
    const doc = artDocument(CATALOG, a.id)!;
    assert.ok(bytes(doc) < ART_INLINE_MAX_BYTES / 1.5, `${a.id}: ${bytes(doc)} bytes`);
    assert.equal(inlineArt(doc), doc, a.id);
  }
});

Deno.test("inlineArt: a document over the limit (UTF-8 bytes of its JSON) is left to art_path", () => {
  const doc = artDocument(CATALOG, "ada")!;
  const room = ART_INLINE_MAX_BYTES - bytes(doc);
  // Exactly at the limit: carried. One byte over — a two-byte character where a one-byte one was — not.
  const at = { ...doc, body: doc.body + "a".repeat(room) };
  assert.equal(bytes(at), ART_INLINE_MAX_BYTES);
  assert.equal(inlineArt(at), at);
  const over = { ...doc, body: doc.body + "a".repeat(room - 1) + "é" };
  assert.equal(bytes(over), ART_INLINE_MAX_BYTES + 1);
  assert.equal(inlineArt(over), null);
});
