/**
 * The byte-level reader of a create-session body's credentials. Provider credentials never become
 * JavaScript strings: this reader finds exactly the credential fields the contract names (each provider
 * entry's `credentials`, `definitions/<type>.ts`), at their place in the raw body — today:
 *
 * | provider | credential fields of `provider_config.<provider>` |
 * |---|---|
 * | `vendor1_realtime` | `client_secret` |
 * | `vendor2` | `access_token` |
 * | `vendor3` | `api_key`, `signed_url` |
 * | `external_engine` | `url` (its userinfo, path, query and fragment), every value of `auth_headers` |
 *
 * — decodes their values (as `TextDecoder` + `JSON.parse` would) into bytes it owns, and gives the rest of
 * the service a copy of the body in which each of those values is replaced by a stand-in: the same JSON
 * type, the same length (as the schema measures it), and the same kind for every rule the schema applies to it
 * (a header value's invalid characters; a URL's whitespace, scheme, host, userinfo and path), so the
 * schema answers exactly what it would have answered for the original (tests/api/credential_validation_
 * test.ts runs both paths on thousands of generated bodies). Header *names* are not credentials: they stay
 * in the copy as they are (docs/api.md says so).
 *
 * Every occurrence is replaced, duplicates included (`JSON.parse` keeps the last one, which is the one the
 * reader keeps too), in every provider's config of the body whatever `provider_type` says.
 *
 * @module
 */
import { CredentialHolder } from "../../auth/credential_holder.ts";
import { ByteBuffer, decodeJsonString, urlForbidden } from "../../auth/credential_bytes.ts";
import {
  COMMA,
  isJson,
  keyText,
  LBRACE,
  LBRACKET,
  type Member,
  members,
  named,
  QUOTE,
  RBRACE,
  RBRACKET,
  stringEnd,
  ws,
} from "../../auth/credential_json.ts";
import { urlSkeleton } from "../../auth/credential_url.ts";
import { PROVIDER_TYPES, PROVIDERS } from "./provider_types.ts";
import type { CredentialKind } from "./definition.ts";

/** How a credential field's value is checked by the schema (and so how its stand-in is made). */
type FieldKind = CredentialKind;

/** The credential fields of each provider type (each definition's `credentials`). */
export const CREDENTIAL_FIELDS: Record<string, Record<string, FieldKind>> = Object.fromEntries(
  PROVIDER_TYPES.map((t) => [t, PROVIDERS[t].credentials]),
);

/** The credentials of the body's provider (the last occurrence of each field, as `JSON.parse` keeps). */
export interface FoundCredentials {
  /** `provider_type` of the body (a provider type: otherwise nothing is found). */
  providerType: string;
  /** Each credential field that is a string: its value, UTF-8. */
  secrets: Map<string, Uint8Array>;
  /** `auth_headers` when it is an object: its names (in `JSON.parse`'s key order) and string values. */
  headers: [string, Uint8Array][] | null;
}

/** What {@link readCredentials} made of a body. */
export interface CredentialRead {
  /** The body with every credential value replaced by its stand-in (the original when it is not JSON). */
  blanked: Uint8Array<ArrayBuffer>;
  /** The credentials of the body's provider, or null (no such provider config, or not JSON). */
  found: FoundCredentials | null;
  /** Zeroes the credentials read (call once they are in their holder, or when the create is refused). */
  zero(): void;
}

/**
 * The stand-in of a credential value that is not a string: the same value with every string in it emptied
 * (a credential put in the wrong type is not kept anywhere). Its structure stays — keys (a
 * `provider_connection_id` among them is refused the same way), numbers, array lengths — and so does the
 * value of a `length` member: the schema's length rules measure any value's `length`.
 */
function scrubbed(b: Uint8Array, m: Member): string | null {
  const c = b[m.valueStart];
  if (c === 0x74 || c === 0x66 || c === 0x6e) return null; // true, false, null: kept as they are
  if (c !== LBRACE && c !== LBRACKET) return "0";
  const out = new ByteBuffer(m.valueEnd - m.valueStart);
  const containers: number[] = [];
  let expectKey = false;
  let lastKey = "";
  let at = m.valueStart;
  for (let j = m.valueStart; j < m.valueEnd; j++) {
    const d = b[j];
    if (d === QUOTE) {
      const e = stringEnd(b, j);
      if (expectKey) {
        lastKey = keyText(b, { keyStart: j, keyEnd: e, valueStart: e, valueEnd: e });
        expectKey = false;
      } else if (!(containers.at(-1) === LBRACE && lastKey === "length")) {
        out.bytes(b.subarray(at, j));
        out.ascii('""');
        at = e;
      }
      j = e - 1;
    } else if (d === LBRACE || d === LBRACKET) {
      containers.push(d);
      expectKey = d === LBRACE;
    } else if (d === RBRACE || d === RBRACKET) containers.pop();
    else if (d === COMMA) expectKey = containers.at(-1) === LBRACE;
  }
  out.bytes(b.subarray(at, m.valueEnd));
  const text = new TextDecoder().decode(out.view());
  out.zero();
  return text;
}

/** A string value decoded: its UTF-8 bytes, its lengths, and the character facts the schema checks. */
interface Decoded {
  bytes: Uint8Array;
  /** Length in UTF-16 code units (`value.length`). */
  units: number;
  /** Length in code points, a lone surrogate counting one (how the schema's `min`/`max` measure strings). */
  codePoints: number;
  /** A character URL fields refuse. */
  urlForbidden: boolean;
  /** A UTF-16 code unit header values refuse (controls but tab, DEL). */
  headerInvalid: boolean;
}

function decodeValue(b: Uint8Array, m: Member, into: ByteBuffer): Decoded {
  let forbidden = false;
  let headerInvalid = false;
  let codePoints = 0;
  const units = decodeJsonString(b, m.valueStart + 1, m.valueEnd - 1, (cp) => {
    codePoints++;
    if (urlForbidden(cp)) forbidden = true;
    if ((cp < 0x20 && cp !== 0x09) || cp === 0x7f) headerInvalid = true;
    into.codePoint(cp);
  });
  return { bytes: into.take(), units, codePoints, urlForbidden: forbidden, headerInvalid };
}

/** The stand-in of a credential string (JSON text, quotes included). */
function stringStandIn(kind: FieldKind, d: Decoded): string {
  switch (kind) {
    case "secret":
      return `"${"x".repeat(d.codePoints)}"`;
    case "headers":
      // The header rules measure `value.length` (UTF-16 units) and test each unit.
      return d.units === 0 ? '""' : `"${d.headerInvalid ? "\\u0001" : "x"}${"x".repeat(d.units - 1)}"`;
    default:
      return JSON.stringify(urlSkeleton(d.bytes, d.codePoints, d.urlForbidden, kind.url, kind.path));
  }
}

/**
 * Reads the credentials of a create-session body (see the module's description). A body that is not JSON
 * is passed on as it is (the schema refuses it; nothing is read from it).
 */
export function readCredentials(body: Uint8Array): CredentialRead {
  const held: Uint8Array[] = [];
  const zero = () => {
    for (const h of held) h.fill(0);
    held.length = 0;
  };
  const bom = body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? 3 : 0;
  const root = ws(body, bom);
  if (!isJson(body, bom)) {
    // Not JSON: whatever it holds never reaches a string. Any text that is not JSON gets the same answer.
    return { blanked: body.length ? new TextEncoder().encode("{") : new Uint8Array(0), found: null, zero };
  }
  if (body[root] !== LBRACE) {
    // JSON, not an object: refused for its type alone; a stand-in of that type, its strings emptied.
    const c = body[root];
    const standIn = c === QUOTE
      ? '""'
      : c === LBRACKET
      ? "[]"
      : c === 0x74 || c === 0x66 || c === 0x6e
      ? new TextDecoder().decode(body.subarray(root, root + (c === 0x66 ? 5 : 4)))
      : "0";
    return { blanked: new TextEncoder().encode(standIn), found: null, zero };
  }
  /** [start, end, replacement JSON text] of every credential value, in body order. */
  const edits: [number, number, string][] = [];
  const scratch = new ByteBuffer(256);
  const rootMembers = members(body, root);
  const configs = named(body, rootMembers, "provider_config");
  const typeMember = named(body, rootMembers, "provider_type").at(-1);
  const providerType = typeMember && body[typeMember.valueStart] === QUOTE
    ? keyText(body, { ...typeMember, keyStart: typeMember.valueStart, keyEnd: typeMember.valueEnd })
    : null;
  let found: FoundCredentials | null = null;
  configs.forEach((config, ci) => {
    if (body[config.valueStart] !== LBRACE) return;
    const providers = members(body, config.valueStart);
    for (const [type, fields] of Object.entries(CREDENTIAL_FIELDS)) {
      const entries = named(body, providers, type);
      entries.forEach((entry, ei) => {
        if (body[entry.valueStart] !== LBRACE) return;
        // The one JSON.parse keeps: the last config's last entry of the body's provider type.
        const kept = ci === configs.length - 1 && ei === entries.length - 1 && type === providerType;
        if (kept) found = { providerType: type, secrets: new Map(), headers: null };
        const fieldMembers = members(body, entry.valueStart);
        for (const [field, kind] of Object.entries(fields)) {
          const all = named(body, fieldMembers, field);
          all.forEach((m, mi) => {
            const last = kept && mi === all.length - 1;
            if (kind === "headers") return readHeaders(m, last);
            if (body[m.valueStart] !== QUOTE) {
              const standIn = scrubbed(body, m);
              if (standIn !== null) edits.push([m.valueStart, m.valueEnd, standIn]);
              return;
            }
            const d = decodeValue(body, m, scratch);
            held.push(d.bytes);
            edits.push([m.valueStart, m.valueEnd, stringStandIn(kind, d)]);
            if (last) found!.secrets.set(field, d.bytes);
          });
        }
      });
    }
  });

  function readHeaders(m: Member, last: boolean): void {
    if (body[m.valueStart] !== LBRACE) {
      const standIn = body[m.valueStart] === QUOTE ? '""' : scrubbed(body, m);
      if (standIn !== null) edits.push([m.valueStart, m.valueEnd, standIn]);
      return;
    }
    // Key order as JSON.parse makes it (integer-like names first), the last value of a repeated name.
    const order: Record<string, Uint8Array | null> = Object.create(null);
    for (const h of members(body, m.valueStart)) {
      const name = keyText(body, h);
      if (body[h.valueStart] !== QUOTE) {
        const standIn = scrubbed(body, h);
        if (standIn !== null) edits.push([h.valueStart, h.valueEnd, standIn]);
        order[name] = null;
        continue;
      }
      const d = decodeValue(body, h, scratch);
      held.push(d.bytes);
      edits.push([h.valueStart, h.valueEnd, stringStandIn("headers", d)]);
      order[name] = d.bytes;
    }
    if (last) {
      const f = found!;
      f.headers = Object.keys(order).flatMap((n) => order[n] ? [[n, order[n]!] as [string, Uint8Array]] : []);
    }
  }

  scratch.zero();
  edits.sort((a, b) => a[0] - b[0]);
  const out = new ByteBuffer(body.length);
  let at = 0;
  for (const [start, end, text] of edits) {
    out.bytes(body.subarray(at, start));
    // Stand-ins are not credentials (a URL's stand-in holds its host, which may be non-ASCII).
    out.bytes(new TextEncoder().encode(text));
    at = end;
  }
  out.bytes(body.subarray(at));
  const blanked = out.take();
  return { blanked, found: found as FoundCredentials | null, zero };
}

/**
 * The holder of a validated create's credentials: the credential bytes `found` read (copied into the
 * holder), and the other fields of the validated provider config (`config`, where the credentials are
 * stand-ins) as plain fields. Null when `found` is not of `providerType`.
 */
export function holderOf(
  found: FoundCredentials | null,
  providerType: string,
  config: Record<string, unknown>,
): CredentialHolder | null {
  if (!found || found.providerType !== providerType) return null;
  const fields = CREDENTIAL_FIELDS[providerType] ?? {};
  const plain: Record<string, string | number> = {};
  for (const [name, value] of Object.entries(config)) {
    if (name in fields) continue;
    if (typeof value === "string" || typeof value === "number") plain[name] = value;
  }
  return CredentialHolder.build({ secrets: found.secrets, plain, headers: found.headers ?? [] });
}
