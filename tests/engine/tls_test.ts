import assert from "node:assert/strict";
import { generateEngineTls, issueServerCertificate, loadOrCreateEngineTls } from "../../engine/tls.ts";
import { loadOrCreateToken } from "../../engine/token.ts";

/** Serves a WebSocket echo over TLS with `tls`, connects with/without trusting `caPem`. */
async function tryConnect(tls: { certPem: string; keyPem: string }, caPem: string | null): Promise<string> {
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    cert: tls.certPem,
    key: tls.keyPem,
    onListen() {},
  }, (req) => {
    const { socket, response } = Deno.upgradeWebSocket(req);
    socket.onmessage = (e) => socket.send(`echo:${e.data}`);
    return response;
  });
  const client = caPem ? Deno.createHttpClient({ caCerts: [caPem] }) : null;
  try {
    const ws = new WebSocket(`wss://localhost:${server.addr.port}/`, client ? { client } : {});
    const closed = new Promise((resolve) => ws.addEventListener("close", resolve));
    const result = await new Promise<string>((resolve) => {
      ws.onopen = () => ws.send("ping");
      ws.onmessage = (e) => resolve(String(e.data));
      ws.onerror = (e) => resolve(`error: ${(e as ErrorEvent).message}`);
    });
    if (ws.readyState === WebSocket.OPEN) ws.close();
    await closed;
    return result;
  } finally {
    client?.close();
    await server.shutdown();
  }
}

Deno.test("tls: the CA-signed server certificate is trusted with the CA and refused without it", async () => {
  const tls = await generateEngineTls();
  assert.match(tls.caPem, /^-----BEGIN CERTIFICATE-----\n/);
  assert.match(tls.keyPem, /^-----BEGIN PRIVATE KEY-----\n/);
  assert.equal(await tryConnect(tls, tls.caPem), "echo:ping");
  const refused = await tryConnect(tls, null);
  assert.match(refused, /^error: .*UnknownIssuer/);
  const other = await generateEngineTls();
  // same CA name, different key: refused (rustls reports a bad signature)
  assert.match(await tryConnect(tls, other.caPem), /^error: .*(UnknownIssuer|BadSignature)/);
});

Deno.test("tls: certificate contents (openssl)", async () => {
  const tls = await generateEngineTls();
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/ca.pem`, tls.caPem);
    await Deno.writeTextFile(`${dir}/server.pem`, tls.certPem);
    const run = async (args: string[]) => {
      const out = await new Deno.Command("openssl", { args, stdout: "piped", stderr: "piped" }).output();
      return new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    };
    assert.match(await run(["verify", "-CAfile", `${dir}/ca.pem`, `${dir}/server.pem`]), /server\.pem: OK/);
    const text = await run(["x509", "-in", `${dir}/server.pem`, "-noout", "-text"]);
    assert.match(text, /CA:FALSE/);
    assert.match(text, /TLS Web Server Authentication/);
    assert.match(text, /DNS:localhost, IP Address:127\.0\.0\.1, IP Address:0:0:0:0:0:0:0:1/);
    assert.match(text, /ecdsa-with-SHA256/);
    assert.match(await run(["x509", "-in", `${dir}/ca.pem`, "-noout", "-text"]), /CA:TRUE, pathlen:0/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("tls: loadOrCreateEngineTls persists, reuses, renews the server certificate, regenerates a bad CA", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const first = await loadOrCreateEngineTls(`${dir}/tls`);
    assert.equal(first.generated, "all");
    for (const f of [first.keyFile, first.caKeyFile]) assert.equal((await Deno.stat(f)).mode! & 0o777, 0o600);
    assert.equal((await Deno.stat(`${dir}/tls`)).mode! & 0o777, 0o700);
    assert.equal(await Deno.readTextFile(first.caFile), first.caPem);

    const second = await loadOrCreateEngineTls(`${dir}/tls`);
    assert.equal(second.generated, "none");
    assert.equal(second.caPem, first.caPem);
    assert.equal(second.certPem, first.certPem);
    assert.equal(second.keyPem, first.keyPem);

    // an expired server certificate is renewed under the same CA
    const caKeyPem = await Deno.readTextFile(first.caKeyFile);
    const old = await issueServerCertificate({ certPem: first.caPem, keyPem: caKeyPem }, {
      now: new Date(Date.now() - 3 * 86400_000),
      serverValidityDays: 1,
    });
    await Deno.writeTextFile(first.certFile, old.certPem);
    await Deno.writeTextFile(first.keyFile, old.keyPem);
    const third = await loadOrCreateEngineTls(`${dir}/tls`);
    assert.equal(third.generated, "server");
    assert.equal(third.caPem, first.caPem);
    assert.notEqual(third.certPem, old.certPem);
    assert.ok(third.notAfter.getTime() > Date.now() + 300 * 86400_000);
    assert.equal(await tryConnect(third, first.caPem), "echo:ping");

    // a server key that does not match its certificate is replaced
    await Deno.writeTextFile(first.keyFile, (await generateEngineTls()).keyPem);
    assert.equal((await loadOrCreateEngineTls(`${dir}/tls`)).generated, "server");

    // a CA key that does not match the CA certificate forces a new CA once the server cert needs renewal
    await Deno.writeTextFile(first.caKeyFile, (await generateEngineTls()).caKeyPem);
    await Deno.remove(first.certFile);
    const fourth = await loadOrCreateEngineTls(`${dir}/tls`);
    assert.equal(fourth.generated, "all");
    assert.notEqual(fourth.caPem, first.caPem);
    assert.equal(await tryConnect(fourth, fourth.caPem), "echo:ping");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("token: created once with mode 0600, then reused", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const a = await loadOrCreateToken(`${dir}/sub/token`);
    assert.equal(a.created, true);
    assert.match(a.token, /^[A-Za-z0-9_-]{43}$/);
    assert.equal((await Deno.stat(`${dir}/sub/token`)).mode! & 0o777, 0o600);
    const b = await loadOrCreateToken(`${dir}/sub/token`);
    assert.deepEqual(b, { token: a.token, created: false });
    await Deno.writeTextFile(`${dir}/bad`, "two words\n");
    await assert.rejects(() => loadOrCreateToken(`${dir}/bad`), /must hold one token/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
