import assert from "node:assert/strict";
import { AvatarStyle, parseAvatarStyle, STYLE_DEFAULTS } from "./avatar_style.ts";

Deno.test("avatar style: an empty style takes every documented default", () => {
  assert.deepEqual(parseAvatarStyle({}), STYLE_DEFAULTS);
});

Deno.test("avatar style: unknown parameters, bad colours and unknown choices are refused, naming the path", () => {
  const bad: [unknown, string][] = [
    [{ hair: "bob" }, "hair"],
    [{ skin_color: "peach" }, "skin_color"],
    [{ hair_color: "#12345" }, "hair_color"],
    [{ clothing_color: "#12345g" }, "clothing_color"],
    [{ hair_style: "mohawk" }, "hair_style"],
    [{ face_shape: "triangle" }, "face_shape"],
    [{ clothing_style: "cape" }, "clothing_style"],
    [{ freckles: "yes" }, "freckles"],
  ];
  for (const [input, path] of bad) {
    const r = AvatarStyle.safeParse(input);
    assert.equal(r.success, false, JSON.stringify(input));
    assert.ok(JSON.stringify(r.error!.issues).includes(path), `${path}: ${JSON.stringify(r.error!.issues)}`);
  }
});

Deno.test("avatar style: given values are kept, derived colours stay unset", () => {
  const s = parseAvatarStyle({ hair_style: "afro", skin_color: "#6B4026", accessory: "headset" });
  assert.equal(s.hair_style, "afro");
  assert.equal(s.skin_color, "#6B4026");
  assert.equal(s.accessory, "headset");
  assert.equal(s.skin_shade_color, undefined);
});
