import assert from "node:assert/strict";
import { valueSpan } from "../../src/api/json_span.ts";

const enc = (v: string) => new TextEncoder().encode(v);
const at = (doc: string, path: string[]) => {
  const bytes = enc(doc);
  const span = valueSpan(bytes, path);
  return span ? new TextDecoder().decode(bytes.subarray(span[0], span[1])) : null;
};

Deno.test("json span: finds a nested value's bytes as JSON.parse reads the document", () => {
  const doc =
    ' { "a": [1, {"b": "}"}], "provider_config" : { "x": {"k": "v\\"}"}, "vendor2": {"access_token":"t\\u0041k","agent_id":"a1"} } } ';
  assert.equal(at(doc, ["provider_config", "vendor2"]), '{"access_token":"t\\u0041k","agent_id":"a1"}');
  assert.deepEqual(
    JSON.parse(at(doc, ["provider_config", "vendor2"])!),
    JSON.parse(doc).provider_config.vendor2,
  );
  assert.equal(at(doc, ["a"]), '[1, {"b": "}"}]');
  assert.equal(at(doc, ["missing"]), null);
  assert.equal(at(doc, ["provider_config", "nope"]), null);
});

Deno.test("json span: escaped keys, duplicate keys (the last wins), a BOM, scalars", () => {
  assert.equal(at('{"provider\\u005fconfig": {"k": 1}}', ["provider_config", "k"]), "1");
  const dup = '{"p": {"k": "first"}, "p": {"k": "second"}}';
  assert.equal(at(dup, ["p", "k"]), '"second"');
  assert.equal(JSON.parse(dup).p.k, "second");
  assert.equal(at('\ufeff{"k": true}', ["k"]), "true");
  assert.equal(at('{"k": -1.5e3 }', ["k"]), "-1.5e3");
  assert.equal(at('{"k": null}', ["k"]), "null");
  assert.equal(at("[1,2]", ["k"]), null);
});
