const prof = JSON.parse(await Deno.readTextFile(Deno.args[0]));
const nodes = new Map<number, any>(prof.nodes.map((n: any) => [n.id, n]));
const self = new Map<number, number>();
for (let i = 0; i < prof.samples.length; i++) self.set(prof.samples[i], (self.get(prof.samples[i]) ?? 0) + (prof.timeDeltas[i] ?? 0));
const total = new Map<number, number>();
const tot = (id: number): number => { if (total.has(id)) return total.get(id)!; const n = nodes.get(id); let t = self.get(id) ?? 0; for (const c of n.children ?? []) t += tot(c); total.set(id, t); return t; };
let busy = 0; for (const [id, t] of self) { const n = nodes.get(id); if (!["(idle)", "(program)"].includes(n.callFrame.functionName)) busy += t; }
const byFn = new Map<string, number>();
const walk = (id: number, onStack: Set<string>) => { const n = nodes.get(id); const cf = n.callFrame; const k = `${cf.functionName || "(anon)"} ${cf.url.replace(/.*\/(hono|zod|zod-openapi|src|tests)\//, "$1/")}:${cf.lineNumber}`; if (!onStack.has(k)) byFn.set(k, (byFn.get(k) ?? 0) + tot(id)); const s2 = new Set(onStack); s2.add(k); for (const c of n.children ?? []) walk(c, s2); };
walk(prof.nodes[0].id, new Set());
const N = Number(Deno.args[1] ?? 1);
const filt = new RegExp(Deno.args[2] ?? "src/|hono/");
for (const [k, t] of [...byFn].sort((a, b) => b[1] - a[1]).filter(([k]) => filt.test(k)).slice(0, 45)) console.log((t / busy * 100).toFixed(1).padStart(5), "%", (t / N).toFixed(2).padStart(7), "µs", k);
