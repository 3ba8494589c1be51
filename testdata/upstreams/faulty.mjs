// A faulty MCP server for codecell's end-to-end tests, on the official
// TypeScript SDK, over stdio. Its tools misbehave on request:
//   pid    answers with its process ID (a restart gives another)
//   crash  exits with status 3 in the middle of the call, after a last word on stderr
//   hang   never answers; says on stderr when the client cancels the call
//   env    answers with one of its environment variables, or null
// START_DELAY_MS delays the handshake, for a server that starts slowly.
// It prints SECRET on stderr at start, as careless servers print their
// tokens: codecell must not log it.
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const delay = Number(process.env.START_DELAY_MS || 0);
if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));

const server = new Server({ name: "faulty", version: "1.0.0" }, { capabilities: { tools: {} } });
const noArgs = { type: "object", properties: {} };
const tools = [
  { name: "pid", description: "Returns the server's process ID.", inputSchema: noArgs, annotations: { readOnlyHint: true } },
  { name: "crash", description: "Exits the server in the middle of the call.", inputSchema: noArgs },
  { name: "hang", description: "Never answers; says on stderr when the call is cancelled.", inputSchema: noArgs },
  {
    name: "env",
    description: "Returns the value of one of the server's environment variables, or null.",
    inputSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
  },
];
const text = (s) => ({ content: [{ type: "text", text: s }] });

server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
  switch (req.params.name) {
    case "pid":
      return text(String(process.pid));
    case "crash":
      console.error("faulty: crashing on purpose");
      process.exit(3);
    case "hang":
      return new Promise((_, reject) => {
        extra.signal.addEventListener("abort", () => {
          console.error("faulty: the hanging call was cancelled");
          reject(new Error("cancelled"));
        });
      });
    case "env":
      return text(JSON.stringify(process.env[req.params.arguments?.name] ?? null));
  }
  return { isError: true, content: [{ type: "text", text: `no tool ${req.params.name}` }] };
});

await server.connect(new StdioServerTransport());
console.error(`faulty: ready (pid ${process.pid}); SECRET is ${process.env.SECRET}`);
