// The official MCP TypeScript SDK client as the host of codecell's
// programs' runtime: it answers sampling (llm.*) and elicitation
// (approval.*) requests, and checks what a program sees of them. A second
// client, without those capabilities, checks the errors. The server must
// run with [approval] required_for = ["destructive"] and the fixture
// catalogue (crm.delete_contact is destructive). One JSON line per check;
// exits non-zero when any fails.
//
//   node runtime.mjs stdio /path/to/codecell serve --config FILE --catalog DIR
//   node runtime.mjs http http://127.0.0.1:7410/mcp
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateMessageRequestSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [kind, target, ...rest] = process.argv.slice(2);

function transport() {
  if (kind === "stdio") {
    const env = getDefaultEnvironment();
    if (process.env.CODECELL_SERVER_DATA_DIR) env.CODECELL_SERVER_DATA_DIR = process.env.CODECELL_SERVER_DATA_DIR;
    return new StdioClientTransport({ command: target, args: rest, stderr: "ignore", env });
  }
  if (kind === "http") return new StreamableHTTPClientTransport(new URL(target));
  console.error("usage: runtime.mjs stdio|http TARGET [ARGS...]");
  process.exit(2);
}

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

// run sends a program and returns its run record.
async function run(client, code, extra = {}) {
  const res = await client.callTool({ name: "execute_code", arguments: { code, ...extra } }, undefined, { timeout: 60000 });
  return res.structuredContent;
}

// The host: a model that echoes, a user who answers as the message asks.
const host = new Client({ name: "codecell-runtime-host", version: "1.0.0" }, { capabilities: { sampling: {}, elicitation: {} } });
const asked = [];
host.setRequestHandler(CreateMessageRequestSchema, async req => {
  const last = req.params.messages[req.params.messages.length - 1];
  return { role: "assistant", content: { type: "text", text: "echo:" + last.content.text }, model: "sdk-model", stopReason: "endTurn" };
});
host.setRequestHandler(ElicitRequestSchema, async req => {
  const m = req.params.message;
  asked.push(m);
  if (m.includes("accept")) return { action: "accept", content: { note: "ok" } };
  if (m.includes("cancel")) return { action: "cancel" };
  return { action: "decline" };
});

await check("connect", async () => {
  await host.connect(transport());
  const caps = host.getServerCapabilities();
  return caps;
});

await check("sampling: three calls aggregated", async () => {
  const rec = await run(host, `
    const answers = [];
    for (const p of ["one", "two", "three"]) answers.push((await llm.call({prompt: p, maxTokens: 50})).text);
    const last = await llm.call("four");
    return {joined: answers.join(","), model: last.model, stop: last.stopReason};`);
  assert(rec.status === "ok", JSON.stringify(rec));
  assert(rec.result.joined === "echo:one,echo:two,echo:three" && rec.result.model === "sdk-model" && rec.result.stop === "endTurn", JSON.stringify(rec.result));
  return rec.result;
});

for (const [action, message] of [["accept", "please accept"], ["decline", "no"], ["cancel", "please cancel"]]) {
  await check(`approval.request: ${action}`, async () => {
    const rec = await run(host, `return await approval.request(${JSON.stringify(message)}, {schema: {type: "object", properties: {note: {type: "string"}}}})`);
    assert(rec.status === "ok" && rec.result.action === action, JSON.stringify(rec));
    if (action === "accept") assert(rec.result.content.note === "ok", JSON.stringify(rec.result));
    return rec.result;
  });
}

await check("policy: a destructive call declined is not made", async () => {
  const rec = await run(host, `return await crm.delete_contact({id: "c_9120"})`, { purpose: "clean up, decline" });
  assert(rec.status === "error" && rec.error.code === "approval_declined", JSON.stringify(rec));
  const m = asked.find(m => m.includes("crm.delete_contact"));
  assert(m && m.includes('"id":"c_9120"') && m.includes("clean up, decline"), "approval message: " + m);
  return rec.error.message;
});

await check("policy: a destructive call accepted is made", async () => {
  const rec = await run(host, `return await crm.delete_contact({id: "c_9120"})`, { purpose: "clean up, accept" });
  assert(rec.status === "ok" && rec.result.deleted === "c_9120", JSON.stringify(rec));
  return rec.result;
});

await host.close();

// A client that declared neither sampling nor elicitation.
const bare = new Client({ name: "codecell-runtime-bare", version: "1.0.0" });
await check("connect without capabilities", async () => {
  await bare.connect(transport());
});
for (const [name, code, want] of [
  ["llm.call", `return await llm.call("hi")`, "capability_missing"],
  ["approval.request", `return await approval.request("ok?")`, "capability_missing"],
  ["policy fails closed", `return await crm.delete_contact({id: "c_9120"})`, "approval_unavailable"],
]) {
  await check(`without capabilities: ${name}`, async () => {
    const rec = await run(bare, code);
    assert(rec.status === "error" && rec.error.code === want, JSON.stringify(rec));
    return rec.error.message;
  });
}
await bare.close();
process.exit(failed ? 1 : 0);
