import { createHarness } from "../tests/helpers/harness.ts";
import { startFakeEngine } from "../tests/helpers/fake_engine.ts";
import { engineBody, testTls } from "../tests/helpers/fixtures.ts";
const dir = await Deno.makeTempDir();
const kv = await Deno.openKv(`${dir}/svc.kv`);
const engine = await startFakeEngine(testTls, "ok");
const sink = Deno.env.get("LOGSINK") === "stdout";
const h = await createHarness({
  kv,
  caCerts: [testTls.caPem],
  env: {
    SVC_RATE_LIMIT_PER_MINUTE: Deno.env.get("RL") ?? "1000000",
    SVC_RATE_LIMIT_BURST: "100000",
    SVC_LOG_LEVEL: "info",
  },
});
const key = await h.key("proj_a");
const created = await h.req("POST", "/v1/sessions", { key, body: engineBody(engine.url) });
const sid = created.body.session_id;
const base = "http://svc.test";
const auth = { authorization: `Bearer ${key}` };
const cases: Record<string, () => Request> = {
  get: () => new Request(`${base}/v1/sessions/${sid}`, { headers: auth }),
  token: () => new Request(`${base}/v1/sessions/${sid}/client-token`, { method: "POST", headers: auth }),
  notfound: () => new Request(`${base}/v1/sessions/session:AAAAAAAAAAAAAAAAAAAAAA`, { headers: auth }),
  nokey: () => new Request(`${base}/v1/sessions/${sid}`),
};
const which = (Deno.env.get("CASES") ?? "get,token,notfound,nokey").split(",");
for (const name of which) {
  const mk = cases[name];
  const run = async (n: number, conc: number) => {
    let left = n;
    const t0 = performance.now();
    await Promise.all(Array.from({ length: conc }, async () => {
      while (left-- > 0) {
        const r = await h.fetch(mk());
        await r.arrayBuffer();
      }
    }));
    return (performance.now() - t0) / n * 1000;
  };
  await run(2000, 50);
  const us = await run(Number(Deno.env.get("N") ?? 20000), 50);
  console.log(name, us.toFixed(1), "µs/req (conc 50, in-process)");
  h.logs.length = 0;
}
await h.close();
await engine.close();
kv.close();
