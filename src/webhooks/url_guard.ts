/**
 * Where webhooks may go: `https://` URLs whose host resolves only to public addresses. Loopback, private,
 * shared (CGNAT), link-local (cloud metadata at 169.254.169.254 and fd00:ec2::254 included), multicast,
 * documentation, benchmarking and reserved ranges are refused, and so are IPv6 forms that embed a refused
 * IPv4 address (IPv4-mapped, IPv4-translated, NAT64) or could reach one (IPv4-compatible, local-use NAT64,
 * 6to4, Teredo). Refused host names (localhost, metadata names) are compared without a trailing dot. All
 * this holds unless the deployment allows private destinations (`SVC_WEBHOOK_ALLOW_PRIVATE`, used by tests
 * and private networks). Every resolved address is checked; one bad address refuses the URL.
 *
 * @module
 */

/** Resolves a host name to its IPv4 and IPv6 addresses (empty when it has none). */
export type Resolver = (hostname: string) => Promise<string[]>;

/** Resolves with the system's DNS configuration (`Deno.resolveDns`, A and AAAA), within `timeoutMs`. */
export function dnsResolver(timeoutMs = 5000): Resolver {
  return async (hostname) => {
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), timeoutMs);
    try {
      const lookups = await Promise.allSettled([
        Deno.resolveDns(hostname, "A", { signal: ctl.signal }),
        Deno.resolveDns(hostname, "AAAA", { signal: ctl.signal }),
      ]);
      return lookups.flatMap((r) => r.status === "fulfilled" ? r.value : []);
    } finally {
      clearTimeout(timer);
    }
  };
}

/** Host names refused whatever they resolve to. */
const BLOCKED_NAMES = [/^localhost$/i, /\.localhost$/i, /^metadata$/i, /^metadata\.google\.internal$/i];

function parseIPv4(s: string): number[] | null {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(s);
  if (!m) return null;
  const parts = m.slice(1).map(Number);
  return parts.every((p) => p <= 255) ? parts : null;
}

function v4Blocked([a, b, c]: number[]): boolean {
  return a === 0 || a === 10 || a === 127 || a >= 224 || // this-network, private, loopback, multicast+reserved
    (a === 100 && b >= 64 && b <= 127) || // shared address space (CGNAT; Alibaba metadata 100.100.100.200)
    (a === 169 && b === 254) || // link-local, cloud metadata
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168) ||
    (a === 192 && b === 0 && (c === 0 || c === 2)) || // IETF protocol assignments, TEST-NET-1
    (a === 198 && (b === 18 || b === 19)) || // benchmarking
    (a === 198 && b === 51 && c === 100) || (a === 203 && b === 0 && c === 113); // TEST-NET-2/3
}

/** Parses an IPv6 address into 8 16-bit groups (an embedded IPv4 tail is accepted), or null. */
function parseIPv6(input: string): number[] | null {
  let s = input.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  if (!s.includes(":")) return null;
  const v4 = /(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})$/.exec(s);
  if (v4) {
    const p = parseIPv4(v4[1]);
    if (!p) return null;
    s = s.slice(0, -v4[1].length) + ((p[0] << 8) | p[1]).toString(16) + ":" +
      ((p[2] << 8) | p[3]).toString(16);
  }
  const halves = s.split("::");
  if (halves.length > 2) return null;
  const parse = (h: string) =>
    h === "" ? [] : h.split(":").map((g) => (/^[0-9a-f]{1,4}$/i.test(g) ? parseInt(g, 16) : NaN));
  const head = parse(halves[0]);
  const rest = halves.length === 2 ? parse(halves[1]) : [];
  if ([...head, ...rest].some(Number.isNaN)) return null;
  const total = head.length + rest.length;
  if (halves.length === 1 ? total !== 8 : total > 7) return null;
  return [...head, ...new Array(8 - total).fill(0), ...rest];
}

function v6Blocked(g: number[]): boolean {
  const embedded = [g[6] >> 8, g[6] & 0xff, g[7] >> 8, g[7] & 0xff];
  const zero = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  // ::/96: the unspecified address, loopback (::1) and the deprecated IPv4-compatible ::a.b.c.d (RFC 4291
  // 2.5.5.1), which no public destination uses: all refused.
  if (zero(0, 6)) return true;
  if (zero(0, 5) && g[5] === 0xffff) return v4Blocked(embedded); // IPv4-mapped ::ffff:a.b.c.d
  if (zero(0, 4) && g[4] === 0xffff && g[5] === 0) return v4Blocked(embedded); // IPv4-translated (RFC 2765)
  if (g[0] === 0x64 && g[1] === 0xff9b && zero(2, 6)) return v4Blocked(embedded); // NAT64 well-known /96
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 0x0001) return true; // NAT64 local-use /48 (RFC 8215)
  return (g[0] & 0xfe00) === 0xfc00 || // unique local (fd00:ec2::254 metadata included)
    (g[0] & 0xffc0) === 0xfe80 || // link-local
    (g[0] & 0xff00) === 0xff00 || // multicast
    (g[0] === 0x0100 && zero(1, 4)) || // discard-only 100::/64
    (g[0] === 0x2001 && g[1] === 0x0db8) || // documentation
    (g[0] & 0xfff0) === 0x3ff0 || // documentation 3fff::/20 (RFC 9637)
    (g[0] === 0x2001 && g[1] < 0x0200) || // IETF protocol assignments (Teredo, benchmarking, ORCHID)
    g[0] === 0x2002; // 6to4 (can tunnel to any IPv4)
}

/** True when `address` (an IPv4 or IPv6 literal) is one webhooks may not be sent to. Unparsable → true. */
export function isBlockedAddress(address: string): boolean {
  const v4 = parseIPv4(address);
  if (v4) return v4Blocked(v4);
  const v6 = parseIPv6(address);
  return v6 ? v6Blocked(v6) : true;
}

/** A URL refused as a webhook destination, with a reason safe to show the caller. */
export class WebhookUrlError extends Error {
  override name = "WebhookUrlError";
  /** True when the refusal may change later (the name did not resolve), false when it is final. */
  constructor(message: string, readonly transient = false) {
    super(message);
  }
}

/**
 * Checks the parts of a URL that need no lookup: `https:`, no user info, a host that is not a blocked
 * name or a blocked address literal. Returns the host to resolve, or null for an address literal.
 */
export function checkWebhookUrlSyntax(raw: string, allowPrivate: boolean): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new WebhookUrlError("webhook_url is not a valid URL");
  }
  if (url.protocol !== "https:") throw new WebhookUrlError("webhook_url must be an https:// URL");
  if (url.username || url.password) throw new WebhookUrlError("webhook_url must not contain credentials");
  // A fully qualified name's trailing dot names the same host ("localhost." is localhost).
  const host = url.hostname.replace(/\.+$/, "");
  const literal = parseIPv4(host) !== null || host.startsWith("[");
  if (allowPrivate) return literal ? null : host;
  if (literal) {
    if (isBlockedAddress(host)) {
      throw new WebhookUrlError("webhook_url points to a loopback, private, link-local or reserved address");
    }
    return null;
  }
  if (BLOCKED_NAMES.some((re) => re.test(host)) || !host.includes(".")) {
    throw new WebhookUrlError("webhook_url must name a public host");
  }
  return host;
}

/**
 * Full check of a destination: syntax, then every address the host resolves to. Throws a
 * {@link WebhookUrlError}; a name that does not resolve is a transient refusal.
 */
export async function checkWebhookUrl(raw: string, allowPrivate: boolean, resolve: Resolver): Promise<void> {
  const host = checkWebhookUrlSyntax(raw, allowPrivate);
  if (host === null || allowPrivate) return;
  const addresses = await resolve(host);
  if (addresses.length === 0) throw new WebhookUrlError("webhook_url's host does not resolve", true);
  if (addresses.some(isBlockedAddress)) {
    throw new WebhookUrlError("webhook_url resolves to a loopback, private, link-local or reserved address");
  }
}
