// A test client built on the official MCP TypeScript SDK's experimental
// tasks support (protocol 2025-11-25). It runs execute_code as tasks over
// Streamable HTTP, as two principals, and prints one JSON line per check;
// it exits non-zero when any fails. The server runs with one sandbox,
// sandbox.max_timeout 1s and sandbox.max_task_duration 4s (see node_test.go).
//
//   node tasks.mjs http://127.0.0.1:7410/mcp ALICE_TOKEN BOB_TOKEN
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";

const [target, aliceToken, bobToken] = process.argv.slice(2);

let failed = 0;
async function check(name, fn) {
  const start = Date.now();
  try {
    const detail = await fn();
    console.log(JSON.stringify({ check: name, ok: true, ms: Date.now() - start, detail }));
  } catch (e) {
    failed++;
    console.log(JSON.stringify({ check: name, ok: false, ms: Date.now() - start, error: String(e && e.stack || e) }));
  }
}
function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

async function connect(token) {
  const client = new Client({ name: "codecell-sdk-tasks", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(target), {
    requestInit: { headers: { Authorization: "Bearer " + token } },
  });
  await client.connect(transport);
  return client;
}

// runTask calls execute_code as a task with a deadline of timeoutMs (a
// task without one has the default deadline, as any run) and follows it
// to its end, calling onCreated with the task's id once the handle
// arrives.
async function runTask(client, code, timeoutMs, onCreated) {
  const seen = { created: null, statuses: [], result: null, error: null };
  const stream = client.experimental.tasks.callToolStream(
    { name: "execute_code", arguments: { code, timeout_ms: timeoutMs } }, CallToolResultSchema, { task: {}, timeout: 60000 });
  for await (const message of stream) {
    switch (message.type) {
      case "taskCreated":
        seen.created = message.task;
        if (onCreated) await onCreated(message.task.taskId);
        break;
      case "taskStatus":
        seen.statuses.push(message.task.status);
        break;
      case "result":
        seen.result = message.result;
        break;
      case "error":
        seen.error = message.error;
        break;
    }
  }
  return seen;
}

const alice = await connect(aliceToken);
const bob = await connect(bobToken);

await check("advertised", async () => {
  const caps = alice.getServerCapabilities();
  assert(caps.tasks && caps.tasks.requests && caps.tasks.requests.tools && caps.tasks.requests.tools.call, "no tasks capability: " + JSON.stringify(caps.tasks));
  const { tools } = await alice.listTools();
  const tool = tools.find(t => t.name === "execute_code");
  assert(tool && tool.execution && tool.execution.taskSupport === "optional", "execute_code execution: " + JSON.stringify(tool && tool.execution));
  return tool.execution;
});

// Longer than sandbox.max_timeout (1s): as a task it completes.
const longCode = "await util.sleep({ms: 1500}); return {n: 42}";
let aliceTask = null;
await check("task completed", async () => {
  const seen = await runTask(alice, longCode, 4000, id => { aliceTask = id; });
  assert(seen.created && seen.created.status === "working", "task handle: " + JSON.stringify(seen.created));
  assert(seen.statuses.includes("working") && seen.statuses.at(-1) === "completed", "statuses: " + seen.statuses);
  const rec = seen.result && seen.result.structuredContent;
  assert(rec && rec.status === "ok" && rec.result && rec.result.n === 42, "record: " + JSON.stringify(seen.result));
  const direct = await alice.callTool({ name: "execute_code", arguments: { code: "await util.sleep({ms: 1}); return {n: 42}" } });
  const keys = o => Object.keys(o).sort().join(",");
  assert(keys(direct.structuredContent) === keys(rec), `task record keys ${keys(rec)}, direct ${keys(direct.structuredContent)}`);
  return { polls: seen.statuses.length, keys: keys(rec) };
});

await check("ordinary call keeps max_timeout", async () => {
  const res = await alice.callTool({ name: "execute_code", arguments: { code: longCode } });
  assert(res.isError && res.structuredContent.error.kind === "timeout", "result: " + JSON.stringify(res.structuredContent));
});

await check("task timeout", async () => {
  const seen = await runTask(alice, "for (;;) await util.sleep({ms: 500})", 4000);
  const rec = seen.result && seen.result.structuredContent;
  assert(seen.statuses.at(-1) === "completed" && seen.result.isError && rec.error.kind === "timeout", "result: " + JSON.stringify(seen.result));
  assert(rec.stats.ms >= 3900, "the task ran " + rec.stats.ms + " ms, not its 4 s");
  return { run_ms: rec.stats.ms };
});

await check("task cancelled", async () => {
  let cancelledAt = 0;
  const seen = await runTask(alice, "for (let i = 0; ; i++) { await util.echo({text: String(i)}); await util.sleep({ms: 50}) }", 4000, async id => {
    await new Promise(r => setTimeout(r, 300));
    const res = await alice.experimental.tasks.cancelTask(id);
    cancelledAt = Date.now();
    assert(res.status === "cancelled", "cancel: " + JSON.stringify(res));
  });
  assert(seen.statuses.at(-1) === "cancelled", "statuses: " + seen.statuses);
  // The run stopped: the server's only sandbox serves the next run at
  // once, not after the task's 4 s.
  const res = await alice.callTool({ name: "execute_code", arguments: { code: "return 7" } });
  assert(!res.isError && res.structuredContent.result === 7, "next run: " + JSON.stringify(res.structuredContent));
  return { next_run_after_ms: Date.now() - cancelledAt, queue_ms: res.structuredContent.stats.queue_ms || 0 };
});

await check("another principal", async () => {
  assert(aliceTask, "no task of alice's");
  for (const [what, fn] of [
    ["get", () => bob.experimental.tasks.getTask(aliceTask)],
    ["result", () => bob.experimental.tasks.getTaskResult(aliceTask, CallToolResultSchema)],
    ["cancel", () => bob.experimental.tasks.cancelTask(aliceTask)],
  ]) {
    let got = null;
    try {
      got = await fn();
    } catch (e) {
      continue;
    }
    throw new Error(`bob could ${what} alice's task: ${JSON.stringify(got)}`);
  }
  const bobs = await bob.experimental.tasks.listTasks();
  assert(!bobs.tasks.some(t => t.taskId === aliceTask), "bob lists alice's task");
  const alices = await alice.experimental.tasks.listTasks();
  assert(alices.tasks.some(t => t.taskId === aliceTask), "alice does not list her task");
  const mine = await alice.experimental.tasks.getTask(aliceTask);
  assert(mine.status === "completed", "alice's task: " + JSON.stringify(mine));
  return { alice_tasks: alices.tasks.length, bob_tasks: bobs.tasks.length };
});

await alice.close();
await bob.close();
process.exit(failed ? 1 : 0);
