// drive.mjs: one codecell server alone, one of bench.mjs's workloads in a
// loop, for profiling and for A/B comparisons of CPU per run, which a
// loaded machine moves less than latency. Not part of any make target.
//
//   testdata/peers/node_modules/.bin/node testdata/peers/drive.mjs BINARY WORKLOAD [N] [PAUSE_MS] [PIDFILE]
//
// WORKLOAD is one of 1+1, seq10, seq100, par100, filter1mb. After 20
// warm-up runs it writes the server's pid to PIDFILE (if given) and waits
// PAUSE_MS (time to attach `perf record -p`), then runs N executions and
// prints the client's and the server's p50, the CPU per run of the server
// and of its sandbox workers (from /proc) and their context switches.
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync, readFileSync, readdirSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import net from "node:net";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
const here = path.dirname(fileURLToPath(import.meta.url));
const [bin, wname, nstr, pause, pidfile] = process.argv.slice(2);
const N = parseInt(nstr || "200", 10);
const seq = n => `let n = 0;\nfor (let i = 0; i < ${n}; i++) {\n  const r = await util.echo({ text: "call " + i });\n  n += r.text.length;\n}\nreturn n;`;
const codes = {
  "1+1": "return 1 + 1",
  seq10: seq(10), seq100: seq(100),
  par100: `const rs = await Promise.all(Array.from({ length: 100 }, (_, i) => util.echo({ text: "call " + i })));\nreturn rs.reduce((n, r) => n + r.text.length, 0);`,
  filter1mb: `const doc = await bench.export_orders({});
const hits = doc.orders.filter(o => o.status === "refunded" && o.region === "eu-west" && o.tags.includes("priority"));
return { count: hits.length, total: Math.round(hits.reduce((s, o) => s + o.total, 0) * 100) / 100, first: hits.slice(0, 5).map(o => o.id) };`,
};
const code = codes[wname];
if (!bin || !code) {
  console.error("usage: drive.mjs BINARY (1+1|seq10|seq100|par100|filter1mb) [N] [PAUSE_MS] [PIDFILE]");
  process.exit(2);
}
const port = await new Promise(r => { const s = net.createServer(); s.listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => r(p)); }); });
const dataDir = mkdtempSync(path.join(os.tmpdir(), "cc-drive-"));
const config = path.join(dataDir, "config.toml");
writeFileSync(config, `[limits]\nexecutions_per_minute = 10000000\nexecution_burst = 1000000\ntool_calls_per_minute = 100000000\ntool_call_burst = 10000000\n`);
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("CODECELL_")));
const child = spawn(bin, ["serve", "--config", config, "--http", `127.0.0.1:${port}`, "--catalog", path.join(here, "catalog"), "--data-dir", dataDir, "--log-level", "warn"], { env, stdio: ["pipe", "ignore", "inherit"] });
process.on("exit", () => child.kill("SIGKILL"));
for (let i = 0; i < 600; i++) { try { if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) break; } catch {} await new Promise(r => setTimeout(r, 100)); }
const client = new Client({ name: "drive", version: "1" });
await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
const run = async () => { const t0 = performance.now(); const r = await client.callTool({ name: "execute_code", arguments: { code } }); const ms = performance.now() - t0; if (r.isError) throw new Error(JSON.stringify(r.content)); return [ms, r.structuredContent.stats?.ms]; };
function csw(pid) { let t = 0; try { for (const k of readdirSync(`/proc/${pid}/task`)) { try { const st = readFileSync(`/proc/${pid}/task/${k}/status`, "utf8"); for (const m of st.matchAll(/ctxt_switches:\s+(\d+)/g)) t += +m[1]; } catch {} } } catch {} return t; }
function cswAll(pid) { let kids = []; for (const t of readdirSync(`/proc/${pid}/task`)) { try { kids.push(...readFileSync(`/proc/${pid}/task/${t}/children`, "utf8").trim().split(/\s+/).filter(Boolean)); } catch {} } return [csw(pid), kids.reduce((s, k) => s + csw(k), 0)]; }
// cpu returns the CPU time of pid and of its live children, in ms
// (utime + stime, at the kernel's 100 ticks a second).
function cpu(pid) {
  let tot = 0;
  const one = p => { try { const f = readFileSync(`/proc/${p}/stat`, "utf8"); const a = f.slice(f.lastIndexOf(")") + 2).split(" "); return (+a[11] + +a[12]) * 10; } catch { return 0; } };
  tot += one(pid);
  let kids = [];
  for (const t of readdirSync(`/proc/${pid}/task`)) { try { kids.push(...readFileSync(`/proc/${pid}/task/${t}/children`, "utf8").trim().split(/\s+/).filter(Boolean)); } catch {} }
  const kc = kids.reduce((s, k) => s + one(k), 0);
  return [tot, kc];
}
for (let i = 0; i < 20; i++) await run();
console.error(`pid ${child.pid}`);
if (pidfile) writeFileSync(pidfile, String(child.pid));
if (pause) await new Promise(r => setTimeout(r, +pause));
const [s0, k0] = cpu(child.pid); const [c0, ck0] = cswAll(child.pid);
const cl = [], sv = [];
for (let i = 0; i < N; i++) { const [a, b] = await run(); cl.push(a); sv.push(b); }
const [s1, k1] = cpu(child.pid); const [c1, ck1] = cswAll(child.pid);
const p50 = xs => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`${wname} n=${N} client p50 ${p50(cl).toFixed(2)} ms, run p50 ${p50(sv).toFixed(2)} ms, server cpu/run ${((s1 - s0) / N).toFixed(2)} ms, workers cpu/run ${((k1 - k0) / N).toFixed(2)} ms, csw/run ${((c1 - c0) / N).toFixed(0)}+${((ck1 - ck0) / N).toFixed(0)}, load ${os.loadavg()[0].toFixed(1)}`);
await client.close(); child.kill("SIGTERM");
process.exit(0);
