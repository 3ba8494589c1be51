// The peer server of `make bench-peers`: an ATP server
// (@mondaydotcomorg/atp-server, which runs programs in isolated-vm) with the
// same tools as codecell gets in the benchmark:
//
// Programs reach them as api.<group>.<name>(args) (the README's atp.api.* is
// out of date for 0.19.17; the sandbox defines globalThis.api):
//
//   api.util.echo({text})     returns its input, like codecell's util.echo;
//   api.bench.<tool>(args)    one function per tool of the benchmark
//                             catalogue, returning the first example's result,
//                             as codecell's catalogue fixtures do.
//
//   node --no-node-snapshot atp-server.mjs PORT CATALOG_DIR
//
// It listens on 127.0.0.1:PORT through the server's documented handler()
// (in 0.19.17 listen(port) binds every interface, and start() takes no port
// whatever the README says), prints "listening PORT"
// when ready, and exits on SIGINT, SIGTERM or when its standard input closes
// (the driver died).
import { createServer as createHTTPServer } from "node:http";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createServer } from "@mondaydotcomorg/atp-server";

const [portArg, catalogDir] = process.argv.slice(2);
const port = Number(portArg);
if (!port || !catalogDir) {
  console.error("usage: atp-server.mjs PORT CATALOG_DIR");
  process.exit(2);
}

// Quiet logs, as codecell runs with --log-level warn in the benchmark.
const server = createServer({ logger: "warn" });

server.use({
  name: "util",
  type: "custom",
  description: "Small utilities",
  functions: [
    {
      name: "echo",
      description: "Return the given text (and any extra fields) unchanged.",
      // codecell's util.echo input schema.
      inputSchema: { type: "object", properties: { text: { type: "string", description: "Text to echo back." } }, required: ["text"] },
      handler: async input => input,
    },
  ],
});

for (const file of readdirSync(catalogDir).filter(f => f.endsWith(".json")).sort()) {
  const cat = JSON.parse(readFileSync(join(catalogDir, file), "utf8"));
  server.use({
    name: cat.category,
    type: "custom",
    description: cat.description,
    functions: cat.tools.map(t => {
      const result = (t.examples || []).find(e => e.result !== undefined)?.result;
      return {
        name: t.name,
        description: t.description,
        inputSchema: t.inputSchema || { type: "object" },
        handler: async () => result,
      };
    }),
  });
}

await server.start();
const handler = server.handler();
const http = createHTTPServer((req, res) => {
  handler(req, res).catch(err => {
    console.error("atp handler:", err);
    if (!res.headersSent) res.writeHead(500);
    res.end();
  });
});
http.listen(port, "127.0.0.1", () => console.log("listening " + port));

let stopping = false;
async function stop() {
  if (stopping) return;
  stopping = true;
  http.closeAllConnections?.();
  http.close();
  process.exit(0);
}
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
process.stdin.on("end", stop);
process.stdin.on("close", stop);
process.stdin.resume();
