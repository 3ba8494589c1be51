// ab.mjs: two codecell binaries side by side, one of bench.mjs's
// workloads on each, interleaved as bench.mjs interleaves codecell and
// ATP (each iteration runs the program once on each server, the order
// swapped every iteration), so that a loaded machine's noise hits both
// alike. For A/B comparisons of latency, which drive.mjs, one server at a
// time, cannot make on a busy machine. Not part of any make target.
//
//   testdata/peers/node_modules/.bin/node testdata/peers/ab.mjs BINARY_A BINARY_B WORKLOAD [N]
//
// WORKLOAD is one of 1+1, seq10, seq100, par100, filter1mb. After 20
// warm-up runs on each it runs N iterations (default 200) and prints, for
// each binary, the client's p50 and p95, the run's p50 (stats.ms), and
// the ratio of the p50s, with the load average.
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import net from "node:net";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const [binA, binB, wname, nstr] = process.argv.slice(2);
const N = parseInt(nstr || "200", 10);
const seq = n => `let n = 0;\nfor (let i = 0; i < ${n}; i++) {\n  const r = await util.echo({ text: "call " + i });\n  n += r.text.length;\n}\nreturn n;`;
const codes = {
  "1+1": "return 1 + 1",
  seq10: seq(10),
  seq100: seq(100),
  par100: `const rs = await Promise.all(Array.from({ length: 100 }, (_, i) => util.echo({ text: "call " + i })));\nreturn rs.reduce((n, r) => n + r.text.length, 0);`,
  filter1mb: `const doc = await bench.export_orders({});
const hits = doc.orders.filter(o => o.status === "refunded" && o.region === "eu-west" && o.tags.includes("priority"));
return { count: hits.length, total: Math.round(hits.reduce((s, o) => s + o.total, 0) * 100) / 100, first: hits.slice(0, 5).map(o => o.id) };`,
};
const code = codes[wname];
if (!binA || !binB || !code) {
  console.error("usage: ab.mjs BINARY_A BINARY_B (1+1|seq10|seq100|par100|filter1mb) [N]");
  process.exit(2);
}
const children = [];
process.on("exit", () => children.forEach(c => c.kill("SIGKILL")));

async function start(bin) {
  const port = await new Promise(r => { const s = net.createServer(); s.listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => r(p)); }); });
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "cc-ab-"));
  const config = path.join(dataDir, "config.toml");
  writeFileSync(config, `[limits]\nexecutions_per_minute = 10000000\nexecution_burst = 1000000\ntool_calls_per_minute = 100000000\ntool_call_burst = 10000000\n`);
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("CODECELL_")));
  const child = spawn(bin, ["serve", "--config", config, "--http", `127.0.0.1:${port}`, "--catalog", path.join(here, "catalog"), "--data-dir", dataDir, "--log-level", "warn"], { env, stdio: ["pipe", "ignore", "inherit"] });
  children.push(child);
  for (let i = 0; i < 600; i++) { try { if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) break; } catch {} await new Promise(r => setTimeout(r, 100)); }
  const client = new Client({ name: "ab", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
  const samples = { client: [], run: [] };
  const run = async () => {
    const t0 = performance.now();
    const r = await client.callTool({ name: "execute_code", arguments: { code } });
    const ms = performance.now() - t0;
    if (r.isError) throw new Error(JSON.stringify(r.content));
    return [ms, r.structuredContent.stats?.ms];
  };
  return { bin, client, samples, run };
}

const a = await start(binA);
const b = await start(binB);
for (let i = 0; i < 20; i++) { await a.run(); await b.run(); }
const load0 = os.loadavg()[0];
for (let i = 0; i < N; i++) {
  for (const s of i % 2 === 0 ? [a, b] : [b, a]) {
    const [ms, run] = await s.run();
    s.samples.client.push(ms);
    s.samples.run.push(run);
  }
}
const load1 = os.loadavg()[0];
const q = (xs, p) => { const s = [...xs].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)]; };
for (const s of [a, b]) {
  console.log(`${s.bin} ${wname} n=${N}: client p50 ${q(s.samples.client, 0.5).toFixed(2)} ms, p95 ${q(s.samples.client, 0.95).toFixed(2)} ms, run p50 ${q(s.samples.run, 0.5).toFixed(2)} ms`);
}
console.log(`A/B client p50 ${(q(a.samples.client, 0.5) / q(b.samples.client, 0.5)).toFixed(2)}×, run p50 ${(q(a.samples.run, 0.5) / q(b.samples.run, 0.5)).toFixed(2)}×, load ${load0.toFixed(1)} → ${load1.toFixed(1)}`);
await a.client.close();
await b.client.close();
process.exit(0);
