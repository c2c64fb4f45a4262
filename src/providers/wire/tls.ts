/**
 * TLS over an engine's TCP connection: `Deno.startTls` with the bundled roots plus the configured extra CAs
 * (`SVC_ENGINE_CA_FILE`, the embedded engine's), and the handshake completed before the caller writes
 * anything — the request then leaves encrypted at once rather than queued as plaintext inside the TLS stack
 * (it may carry credential bytes, which the caller zeroes as soon as it is written).
 *
 * @module
 */

/** Starts TLS on `tcp` for `hostname` and completes the handshake (the caller drops `tcp` on failure). */
export async function startTls(
  tcp: Deno.TcpConn,
  hostname: string,
  caCerts: readonly string[],
  /** Called with the TLS connection as soon as it exists (so an abort can close it during the handshake). */
  opened: (tls: Deno.TlsConn) => void,
): Promise<Deno.TlsConn> {
  const tls = await Deno.startTls(tcp, { hostname, caCerts: [...caCerts] });
  opened(tls);
  await tls.handshake();
  return tls;
}
