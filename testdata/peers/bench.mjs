// bench.mjs: codecell beside a peer code-execution server, on the same
// machine, in one run, interleaved, over HTTP. The peer is the ATP server
// (@mondaydotcomorg/atp-server, programs in isolated-vm), driven by its own
// client (@mondaydotcomorg/atp-client); codecell is driven over Streamable
// HTTP by the official MCP TypeScript SDK client, calling execute_code.
//
// Usage (from the repository root; `make bench-peers` does all of it):
//
//   make build && testdata/peers/install.sh
//   testdata/peers/node_modules/.bin/node testdata/peers/bench.mjs \
//       [--codecell bin/codecell] [--out bin/peers.md] [--runs 1] [--scale 1] [--only NAME,...]
//
//   make bench-peers PEERS_ARGS="--runs 3"      three runs, fresh servers each,
//                                               and the range of the ratios
//
//   --scale 0.1   a tenth of the iterations (a quick look; default 1: about
//                 a minute per run on 2 busy cores)
//   --only seq10,filter1mb   some workloads only
//
// Workloads (the same program text on both servers; only the tool namespace
// differs: `util.echo` in codecell, `api.util.echo` in ATP):
//
//   1+1          return 1 + 1
//   seq10        10 sequential util.echo calls
//   seq100       100 sequential util.echo calls
//   par100       100 util.echo calls awaited together (Promise.all)
//   filter1mb    one call to bench.export_orders, whose result is a ~0.96 MB
//                JSON document (testdata/peers/catalog/bench.json, made by
//                gen-catalog.mjs), filtered in the program to a small answer
//
// Both servers get the same tools: util.echo returns its arguments (codecell's
// built-in; ATP gets a function with the same input schema), and every tool of
// the benchmark catalogue returns its first example's result (codecell's
// catalogue fixtures; ATP gets functions that return the same parsed JSON).
// Each call passes different arguments, and every answer is checked against
// the expected value, so neither server can skip work.
//
// Method: for each workload, warm-up runs on both servers, then N iterations
// that each run the program once on each server, the order swapped every
// iteration, so that machine noise hits both alike. A sample is the latency
// of one execution as its client sees it (request sent to result decoded).
// The table gives p50 and p95 per server and the ratio ATP/codecell (above 1:
// codecell is faster). It is written to --out and to stdout, with the
// versions, the machine and its load average: on a shared machine the
// figures are noisy; compare runs taken back to back.
//
// Configuration, the same spirit on both sides: codecell runs with its
// defaults except rate limits raised far above what the benchmark sends, a
// fresh data directory, and log level warn; ATP runs with its defaults
// (createServer()) and logger "warn", NODE_ENV=production. Both listen on
// 127.0.0.1 only. The servers are stopped when the driver exits, fails or is
// interrupted (Ctrl-C).
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { AgentToolProtocolClient } from "@mondaydotcomorg/atp-client";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");

const { values: opts } = parseArgs({
  options: {
    codecell: { type: "string", default: path.join(root, "bin/codecell") },
    out: { type: "string", default: path.join(root, "bin/peers.md") },
    runs: { type: "string", default: "1" },
    scale: { type: "string", default: "1" },
    only: { type: "string", default: "" },
  },
});
const runs = Math.max(1, parseInt(opts.runs, 10) || 1);
const scale = Math.max(0.01, Number(opts.scale) || 1);

// ---- workloads ------------------------------------------------------------

const catalogDir = path.join(here, "catalog");
const orders = JSON.parse(readFileSync(path.join(catalogDir, "bench.json"), "utf8")).tools.find(t => t.name === "export_orders").examples[0].result;
const docBytes = JSON.stringify(orders).length;

// The filter: refunded orders from eu-west tagged priority (a few dozen of
// 2,500), their count, their total and the first five ids.
const filterBody = ns => `const doc = await ${ns}bench.export_orders({});
const hits = doc.orders.filter(o => o.status === "refunded" && o.region === "eu-west" && o.tags.includes("priority"));
return { count: hits.length, total: Math.round(hits.reduce((s, o) => s + o.total, 0) * 100) / 100, first: hits.slice(0, 5).map(o => o.id) };`;
const expectedFilter = (() => {
  const hits = orders.orders.filter(o => o.status === "refunded" && o.region === "eu-west" && o.tags.includes("priority"));
  return { count: hits.length, total: Math.round(hits.reduce((s, o) => s + o.total, 0) * 100) / 100, first: hits.slice(0, 5).map(o => o.id) };
})();

const seq = n => ns => `let n = 0;
for (let i = 0; i < ${n}; i++) {
  const r = await ${ns}util.echo({ text: "call " + i });
  n += r.text.length;
}
return n;`;
const echoSum = n => Array.from({ length: n }, (_, i) => ("call " + i).length).reduce((a, b) => a + b, 0);

const workloads = [
  { name: "1+1", title: "`return 1 + 1`", warmup: 50, n: 1000, code: () => "return 1 + 1", expect: 2 },
  { name: "seq10", title: "10 sequential tool calls", warmup: 20, n: 500, code: seq(10), expect: echoSum(10) },
  { name: "seq100", title: "100 sequential tool calls", warmup: 10, n: 200, code: seq(100), expect: echoSum(100) },
  {
    name: "par100",
    title: "100 parallel tool calls (`Promise.all`)",
    warmup: 10,
    n: 200,
    code: ns => `const rs = await Promise.all(Array.from({ length: 100 }, (_, i) => ${ns}util.echo({ text: "call " + i })));
return rs.reduce((n, r) => n + r.text.length, 0);`,
    expect: echoSum(100),
  },
  {
    name: "filter1mb",
    title: `filter a ${(docBytes / 1e6).toFixed(2)} MB tool result in the program`,
    warmup: 10,
    n: 100,
    code: filterBody,
    expect: expectedFilter,
  },
].filter(w => !opts.only || opts.only.split(",").includes(w.name));
if (workloads.length === 0) fail(`--only ${opts.only}: no such workload (1+1, seq10, seq100, par100, filter1mb)`);

// ---- processes ------------------------------------------------------------

const children = new Set();
const tmp = mkdtempSync(path.join(os.tmpdir(), "codecell-peers-"));

function fail(msg) {
  console.error("bench-peers: " + msg);
  process.exit(1);
}

// Every way out stops the servers: a normal exit, an error, Ctrl-C.
process.on("exit", () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  rmSync(tmp, { recursive: true, force: true });
});
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(sig, async () => {
    console.error(`bench-peers: ${sig}, stopping the servers`);
    await stopAll();
    process.exit(130);
  });
}

function start(name, cmd, args, env) {
  const child = spawn(cmd, args, { env, stdio: ["pipe", "pipe", "pipe"] });
  child.label = name;
  child.log = "";
  const keep = d => {
    child.log = (child.log + d).slice(-8192);
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  child.exited = new Promise(resolve => child.on("exit", resolve));
  children.add(child);
  return child;
}

async function stop(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGTERM");
  child.stdin.end();
  const t = setTimeout(() => child.kill("SIGKILL"), 5000);
  await child.exited;
  clearTimeout(t);
}

async function stopAll() {
  await Promise.all([...children].map(stop));
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function waitHTTP(child, url) {
  const deadline = Date.now() + 60000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) fail(`${child.label} exited (${child.exitCode}) before it listened:\n${child.log}`);
    try {
      const r = await fetch(url);
      if (r.ok) return;
    } catch {}
    await new Promise(r => setTimeout(r, 100));
  }
  fail(`${child.label} did not answer ${url} within 60 s:\n${child.log}`);
}

async function startCodecell() {
  const port = await freePort();
  const dataDir = mkdtempSync(path.join(tmp, "codecell-"));
  const config = path.join(dataDir, "config.toml");
  // Rate limits far above what the benchmark sends (the defaults are for
  // many principals sharing a server); everything else is the default.
  writeFileSync(
    config,
    `[limits]
executions_per_minute = 10000000
execution_burst = 1000000
tool_calls_per_minute = 100000000
tool_call_burst = 10000000
`,
  );
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("CODECELL_")));
  const child = start("codecell", opts.codecell, ["serve", "--config", config, "--http", `127.0.0.1:${port}`, "--catalog", catalogDir, "--data-dir", dataDir, "--log-level", "warn"], env);
  await waitHTTP(child, `http://127.0.0.1:${port}/healthz`);
  const client = new Client({ name: "codecell-bench-peers", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
  return {
    name: "codecell",
    child,
    ns: "",
    async run(code) {
      const r = await client.callTool({ name: "execute_code", arguments: { code } });
      if (r.isError) throw new Error("codecell: " + (r.content || []).map(c => c.text).join(""));
      return { result: r.structuredContent.result, serverMs: r.structuredContent.stats?.ms };
    },
    close: () => client.close(),
  };
}

async function startATP() {
  const port = await freePort();
  const env = { ...process.env, NODE_ENV: "production" };
  const child = start("atp", process.execPath, ["--no-node-snapshot", path.join(here, "atp-server.mjs"), String(port), catalogDir], env);
  await waitHTTP(child, `http://127.0.0.1:${port}/api/info`);
  const client = new AgentToolProtocolClient({ baseUrl: `http://127.0.0.1:${port}` });
  await client.init({ name: "codecell-bench-peers" });
  return {
    name: "atp",
    child,
    ns: "api.",
    async run(code) {
      // The source's signature (execute(code, config)); its README's
      // execute({code}) is out of date for 0.19.x.
      const r = await client.execute(code);
      if (r.status !== "completed") throw new Error("atp: " + r.status + ": " + JSON.stringify(r.error));
      return { result: r.result, serverMs: r.stats?.duration };
    },
    close: async () => {},
  };
}

// ---- measurement ----------------------------------------------------------

function check(server, w, got) {
  if (JSON.stringify(got) !== JSON.stringify(w.expect)) {
    throw new Error(`${server.name} ${w.name}: got ${JSON.stringify(got)}, want ${JSON.stringify(w.expect)}`);
  }
}

// One execution: its latency at the client, and the run's duration as the
// server reports it (codecell: stats.ms; ATP: stats.duration,
// whole milliseconds), which tells the run from the transport around it.
async function timed(server, w, code) {
  const t0 = performance.now();
  const { result, serverMs } = await server.run(code);
  const ms = performance.now() - t0;
  check(server, w, result);
  return { ms, serverMs };
}

function quantile(sorted, q) {
  // nearest rank
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i];
}

async function measure(cc, atp) {
  const rows = [];
  for (const w of workloads) {
    const n = Math.max(5, Math.round(w.n * scale));
    const codes = { codecell: w.code(cc.ns), atp: w.code(atp.ns) };
    for (let i = 0; i < w.warmup; i++) {
      await timed(cc, w, codes.codecell);
      await timed(atp, w, codes.atp);
    }
    const samples = { codecell: [], atp: [] };
    for (let i = 0; i < n; i++) {
      const order = i % 2 === 0 ? [cc, atp] : [atp, cc];
      for (const s of order) samples[s.name].push(await timed(s, w, codes[s.name]));
    }
    const stat = (xs, key) => {
      const s = xs.map(x => x[key]).filter(x => typeof x === "number").sort((a, b) => a - b);
      return s.length ? { p50: quantile(s, 0.5), p95: quantile(s, 0.95) } : { p50: NaN, p95: NaN };
    };
    const c = stat(samples.codecell, "ms");
    const a = stat(samples.atp, "ms");
    const cs = stat(samples.codecell, "serverMs");
    const as = stat(samples.atp, "serverMs");
    rows.push({ w, n, c, a, cs, as, r50: a.p50 / c.p50, r95: a.p95 / c.p95 });
    process.stderr.write(`  ${w.name}: codecell p50 ${c.p50.toFixed(2)} ms, atp p50 ${a.p50.toFixed(2)} ms, ${(a.p50 / c.p50).toFixed(2)}×\n`);
  }
  return rows;
}

// ---- report ---------------------------------------------------------------

function pkgVersion(name) {
  try {
    return JSON.parse(readFileSync(path.join(here, "node_modules", name, "package.json"), "utf8")).version;
  } catch {
    return "?";
  }
}

function codecellVersion() {
  try {
    return execFileSync(opts.codecell, ["version"], { encoding: "utf8" }).trim();
  } catch (e) {
    return "codecell (version unknown: " + e.message + ")";
  }
}

const ms = x => (x < 10 ? x.toFixed(2) : x.toFixed(1));
const ratio = x => x.toFixed(2) + "×";

function table(rows) {
  const out = [
    "| workload | n | codecell p50 ms | codecell p95 ms | ATP p50 ms | ATP p95 ms | ATP/codecell p50 | ATP/codecell p95 |",
    "|---|---:|---:|---:|---:|---:|---:|---:|",
  ];
  for (const r of rows) out.push(`| ${r.w.title} | ${r.n} | ${ms(r.c.p50)} | ${ms(r.c.p95)} | ${ms(r.a.p50)} | ${ms(r.a.p95)} | ${ratio(r.r50)} | ${ratio(r.r95)} |`);
  return out.join("\n");
}

// The run alone, as each server reports it (not the same span on both: a
// hint of how much of the latency is the run and how much is around it).
function serverTable(rows) {
  const out = ["| workload | codecell run p50 ms | client − run, codecell | ATP run p50 ms | client − run, ATP |", "|---|---:|---:|---:|---:|"];
  for (const r of rows) out.push(`| ${r.w.title} | ${ms(r.cs.p50)} | ${ms(r.c.p50 - r.cs.p50)} | ${ms(r.as.p50)} | ${ms(r.a.p50 - r.as.p50)} |`);
  return out.join("\n");
}

function header() {
  const cpus = os.cpus();
  return [
    `# codecell beside the ATP server`,
    ``,
    `- date: ${new Date().toISOString()}`,
    `- machine: ${cpus.length} cores (${cpus[0]?.model?.trim() ?? "?"}), ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${os.type()} ${os.release()}`,
    `- codecell: ${codecellVersion()}, over Streamable HTTP, client @modelcontextprotocol/sdk ${pkgVersion("@modelcontextprotocol/sdk")}`,
    `- ATP: @mondaydotcomorg/atp-server ${pkgVersion("@mondaydotcomorg/atp-server")} (isolated-vm ${pkgVersion("isolated-vm")}), client @mondaydotcomorg/atp-client ${pkgVersion("@mondaydotcomorg/atp-client")}`,
    `- Node.js ${process.version} (driver and ATP server)`,
    `- method: both servers on 127.0.0.1, one client each in one Node.js process; per workload, warm-up runs, then each iteration runs the program once on each server, order swapped every iteration; a sample is one execution as its client sees it. Ratio above 1: codecell is faster (target ≥ 2×).`,
  ].join("\n");
}

async function oneRun(k) {
  const load0 = os.loadavg();
  process.stderr.write(`run ${k}/${runs}: starting codecell and the ATP server\n`);
  const [cc, atp] = await Promise.all([startCodecell(), startATP()]);
  let rows;
  try {
    rows = await measure(cc, atp);
  } finally {
    await cc.close().catch(() => {});
    await atp.close().catch(() => {});
    await stopAll();
    children.clear();
  }
  const load1 = os.loadavg();
  const load = `load average (1 min) ${load0[0].toFixed(2)} at the start, ${load1[0].toFixed(2)} at the end`;
  return { rows, load };
}

const results = [];
for (let k = 1; k <= runs; k++) results.push(await oneRun(k));

let md = header() + "\n";
results.forEach((r, i) => {
  md += `\n## Run ${i + 1} of ${runs}\n\n${r.load}.\n\n${table(r.rows)}\n\nThe run alone, as each server reports it (codecell: stats.ms; ATP: stats.duration, whole ms), p50, and what the client saw beyond it:\n\n${serverTable(r.rows)}\n`;
});
if (runs > 1) {
  md += `\n## Range over the ${runs} runs (ATP/codecell, p50)\n\n| workload | min | max |\n|---|---:|---:|\n`;
  results[0].rows.forEach((row, j) => {
    const xs = results.map(r => r.rows[j].r50);
    md += `| ${row.w.title} | ${ratio(Math.min(...xs))} | ${ratio(Math.max(...xs))} |\n`;
  });
}
mkdirSync(path.dirname(opts.out), { recursive: true });
writeFileSync(opts.out, md);
process.stdout.write(md);
process.stderr.write(`wrote ${opts.out}\n`);
process.exit(0);
