// A two-minute run as an MCP task, followed by the official MCP TypeScript
// SDK's experimental tasks client (protocol 2025-11-25) until it completes:
// the client polls tasks/get, then fetches the record with tasks/result.
// The server runs with sandbox.max_timeout 5s and sandbox.max_task_duration
// 3m (see tasks_node_test.go). Prints one JSON line; exits non-zero if the
// check fails.
//
//   node longtask.mjs http://127.0.0.1:7410/mcp TOKEN
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";

const [target, token] = process.argv.slice(2);
const client = new Client({ name: "codecell-sdk-longtask", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(new URL(target), {
  requestInit: { headers: { Authorization: "Bearer " + token } },
}));

const start = Date.now();
// util.sleep waits at most 10 s a call: twelve calls are two minutes.
const code = "let slept = 0; for (let i = 0; i < 12; i++) { await util.sleep({ms: 10000}); slept += 10000; progress(`slept ${slept} ms`, slept / 120000) } return {slept}";
const statuses = [];
let result = null, error = null, taskId = null;
try {
  const stream = client.experimental.tasks.callToolStream(
    { name: "execute_code", arguments: { code, timeout_ms: 180000 } }, CallToolResultSchema, { task: {}, timeout: 200000 });
  for await (const m of stream) {
    if (m.type === "taskCreated") taskId = m.task.taskId;
    if (m.type === "taskStatus") statuses.push(m.task.status);
    if (m.type === "result") result = m.result;
    if (m.type === "error") error = m.error;
  }
} catch (e) {
  error = String(e && e.stack || e);
}
const rec = result && result.structuredContent;
const ms = Date.now() - start;
const ok = !error && taskId && statuses.at(-1) === "completed" && rec && rec.status === "ok" && rec.result.slept === 120000 && ms >= 120000;
console.log(JSON.stringify({ check: "two-minute task", ok: !!ok, ms, detail: { polls: statuses.length, working: statuses.filter(s => s === "working").length, run_ms: rec && rec.stats.ms }, error: ok ? undefined : JSON.stringify({ error, statuses, result }) }));
await client.close();
process.exit(ok ? 0 : 1);
