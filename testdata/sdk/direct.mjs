// Direct mode through the official TypeScript SDK client: the SDK
// validates every tool's schemas when listing and every structured result
// against its tool's output schema. A filtered result (an e-mail address
// replaced by a token) must not make it reject the call.
//
//   node direct.mjs /path/to/codecell serve --expose both --catalog ../catalog
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";

// childEnv is the minimal environment a host gives a stdio server, plus
// the data directory the test chose, so the server never touches the
// user's own store.
function childEnv() {
  const env = getDefaultEnvironment();
  if (process.env.CODECELL_SERVER_DATA_DIR) env.CODECELL_SERVER_DATA_DIR = process.env.CODECELL_SERVER_DATA_DIR;
  return env;
}

const [command, ...args] = process.argv.slice(2);
const client = new Client({ name: "codecell-direct-test", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command, args, stderr: "ignore", env: childEnv() }));
// tools/list is paged (server.list_page_size): a client follows
// nextCursor, as hosts built on the SDK do.
const tools = [];
let pages = 0;
for (let cursor; ; ) {
  const page = await client.listTools(cursor ? { cursor } : {});
  tools.push(...page.tools);
  pages++;
  if (!page.nextCursor) break;
  cursor = page.nextCursor;
}
const names = tools.map(t => t.name);
if (new Set(names).size !== names.length) throw new Error("tools/list listed a tool twice");
for (const want of ["execute_code", "crm__search_contacts"]) {
  if (!names.includes(want)) throw new Error("tools/list lacks " + want);
}
const result = await client.callTool({ name: "crm__search_contacts", arguments: { query: "lindqvist" } });
const text = (result.content || []).map(c => c.text).join("");
if (result.isError) throw new Error("crm__search_contacts failed: " + text);
if (!/⟦email:[0-9a-f]+⟧/.test(text) || text.includes("anna.lindqvist@northwind.se")) throw new Error("not filtered: " + text);
console.log(JSON.stringify({ ok: true, tools: names.length, pages, bytes: text.length }));
await client.close();
