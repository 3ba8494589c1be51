// A test client built on the official MCP TypeScript SDK. It connects to a
// codecell server over one transport and checks what an MCP host relies
// on: initialize, tools/list, a resource read, execute_code, progress
// notifications and cancellation. It prints one JSON line per check and
// exits non-zero when any fails.
//
//   node client.mjs stdio /path/to/codecell serve
//   node client.mjs sse http://127.0.0.1:7410/sse
//   node client.mjs http http://127.0.0.1:7410/mcp
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

// childEnv is the minimal environment a host gives a stdio server, plus
// the data directory the test chose, so the server never touches the
// user's own store.
function childEnv() {
  const env = getDefaultEnvironment();
  if (process.env.CODECELL_SERVER_DATA_DIR) env.CODECELL_SERVER_DATA_DIR = process.env.CODECELL_SERVER_DATA_DIR;
  return env;
}

const [kind, target, ...rest] = process.argv.slice(2);
let transport;
switch (kind) {
  case "stdio":
    transport = new StdioClientTransport({ command: target, args: rest, stderr: "ignore", env: childEnv() });
    break;
  case "sse":
    transport = new SSEClientTransport(new URL(target));
    break;
  case "http":
    transport = new StreamableHTTPClientTransport(new URL(target));
    break;
  default:
    console.error("usage: client.mjs stdio|sse|http TARGET [ARGS...]");
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
function text(result) {
  return (result.content || []).filter(c => c.type === "text").map(c => c.text).join("");
}

const client = new Client({ name: "codecell-sdk-test", version: "1.0.0" });

await check("initialize", async () => {
  await client.connect(transport);
  const info = client.getServerVersion();
  assert(info && info.name === "codecell", "server name: " + JSON.stringify(info));
  const caps = client.getServerCapabilities();
  assert(caps.tools && caps.resources && caps.prompts, "capabilities: " + JSON.stringify(caps));
  return info;
});

await check("tools/list", async () => {
  // The SDK validates every tool's schemas; a bad one rejects the list.
  const { tools } = await client.listTools();
  const names = tools.map(t => t.name).sort();
  assert(JSON.stringify(names) === JSON.stringify(["execute_code", "read_tools", "search_tools"]), "tools: " + names);
  const exec = tools.find(t => t.name === "execute_code");
  assert(exec.outputSchema && exec.outputSchema.type === "object", "execute_code has no output schema");
  return names;
});

await check("resources/read", async () => {
  const { contents } = await client.readResource({ uri: "codecell://tools/manifest.json" });
  const manifest = JSON.parse(contents[0].text);
  assert(manifest && JSON.stringify(manifest).includes("util"), "manifest: " + contents[0].text);
  const tmpl = await client.listResourceTemplates();
  assert(tmpl.resourceTemplates.length >= 3, "templates: " + JSON.stringify(tmpl));
  const sig = await client.readResource({ uri: "codecell://tools/util/echo.d.ts" });
  assert(sig.contents[0].text.includes("echo"), "signature: " + sig.contents[0].text);
  return contents[0].text.length;
});

await check("prompts/get", async () => {
  const p = await client.getPrompt({ name: "code-mode" });
  assert(p.messages[0].content.text.includes("execute_code"), "prompt");
});

await check("execute_code", async () => {
  const result = await client.callTool({
    name: "execute_code",
    arguments: { code: "const [a, b] = await Promise.all([util.echo({text: 'x'}), util.echo({text: 'y'})]); console.log('hi'); return a.text + b.text" },
  });
  // The SDK validates structuredContent against the output schema.
  assert(!result.isError, "isError: " + text(result));
  assert(result.structuredContent.result === "xy", "result: " + JSON.stringify(result.structuredContent));
  assert(result.structuredContent.logs[0].message === "hi", "logs");
  return result.structuredContent.stats;
});

await check("execute_code error", async () => {
  const result = await client.callTool({ name: "execute_code", arguments: { code: "let x = ;" } });
  assert(result.isError === true, "a syntax error is not isError");
  assert(text(result).includes("syntax_error"), "text: " + text(result));
});

await check("progress", async () => {
  const seen = [];
  const result = await client.callTool(
    { name: "execute_code", arguments: { code: "progress('start', 0.1); await util.sleep({ms: 20}); progress('middle', 0.5); await util.sleep({ms: 20}); progress('end', 1); await util.sleep({ms: 20}); 'done'" } },
    undefined,
    { onprogress: p => seen.push(p) },
  );
  assert(!result.isError, text(result));
  // Notifications are best effort, and over Streamable HTTP mcp-go may
  // deliver them on the request's stream or on the client's GET stream, so
  // neither their count nor their order is asserted.
  assert(seen.length >= 1, "no progress notification");
  for (const p of seen) assert(["start", "middle", "end"].includes(p.message) && p.progress > 0, "progress " + JSON.stringify(p));
  return seen.map(p => p.message + "@" + p.progress);
});

await check("cancellation", async () => {
  const ac = new AbortController();
  const call = client.callTool(
    { name: "execute_code", arguments: { code: "while (true) {}", timeout_ms: 60000 } },
    undefined,
    { signal: ac.signal, timeout: 120000 },
  );
  setTimeout(() => ac.abort("test cancels"), 300);
  let aborted = false;
  try {
    await call;
  } catch (e) {
    aborted = true;
  }
  assert(aborted, "the cancelled call returned");
  // With the runaway interrupted, the server runs the next program at once.
  const start = Date.now();
  const next = await client.callTool({ name: "execute_code", arguments: { code: "'next'" } }, undefined, { timeout: 30000 });
  assert(!next.isError && next.structuredContent.result === "next", "next run: " + text(next));
  return { nextMs: Date.now() - start };
});

await client.close();
process.exit(failed ? 1 : 0);
