// Writes catalog/bench.json, the benchmark catalogue that `make bench-peers`
// gives to both servers: one category, "bench", whose tool export_orders
// returns a ~0.96 MB JSON document (its only example's result). The data are
// made up by a seeded generator, so the file is the same on every run:
//
//   node gen-catalog.mjs            (writes catalog/bench.json)
//   node gen-catalog.mjs --check    (exits 1 when the file is stale)
//
// The orders hold no e-mail addresses, phone numbers or other values that an
// output filter would look at: the workload measures the data path (a tool
// result parsed into the sandbox and filtered by the program), not a filter.
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const ORDERS = 2500;
const out = fileURLToPath(new URL("catalog/bench.json", import.meta.url));

// mulberry32: a small seeded PRNG, so every run writes the same bytes.
function rng(seed) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const rand = rng(9);
const pick = a => a[Math.floor(rand() * a.length)];
const pad = (n, w) => String(n).padStart(w, "0");
const cents = x => Math.round(x * 100) / 100;

const statuses = ["pending", "paid", "shipped", "delivered", "refunded", "cancelled"];
const regions = ["eu-west", "eu-north", "us-east", "us-west", "ap-south", "ap-east"];
const currencies = ["EUR", "USD", "GBP", "JPY"];
const channels = ["web", "mobile", "partner", "store"];
const tags = ["gift", "priority", "wholesale", "subscription", "backorder", "fragile", "promo"];
const words = ["please", "leave", "at", "the", "door", "call", "before", "delivery", "second", "floor", "side", "entrance", "no", "weekend", "wrap", "separately"];

function order(i) {
  const items = [];
  const n = 1 + Math.floor(rand() * 4);
  for (let j = 0; j < n; j++) {
    items.push({ sku: "sku-" + pad(Math.floor(rand() * 5000), 5), qty: 1 + Math.floor(rand() * 5), unit_price: cents(1 + rand() * 199) });
  }
  const subtotal = cents(items.reduce((s, it) => s + it.qty * it.unit_price, 0));
  const day = 1 + Math.floor(rand() * 28);
  const month = 1 + Math.floor(rand() * 12);
  const noteLen = Math.floor(rand() * 8);
  return {
    id: "ord-" + pad(i + 1, 6),
    created_at: `2025-${pad(month, 2)}-${pad(day, 2)}T${pad(Math.floor(rand() * 24), 2)}:${pad(Math.floor(rand() * 60), 2)}:00Z`,
    status: pick(statuses),
    customer_id: "cus-" + pad(Math.floor(rand() * 900), 4),
    region: pick(regions),
    channel: pick(channels),
    currency: pick(currencies),
    items,
    subtotal,
    shipping: cents(rand() < 0.3 ? 0 : 4.99 + rand() * 20),
    total: cents(subtotal * 1.2),
    tags: tags.filter(() => rand() < 0.2),
    note: Array.from({ length: noteLen }, () => pick(words)).join(" "),
  };
}

const orders = Array.from({ length: ORDERS }, (_, i) => order(i));
const result = { shop: "fixture-shop", generated: "2025-12-31T00:00:00Z", count: orders.length, orders };

const Order = {
  type: "object",
  properties: {
    id: { type: "string" },
    created_at: { type: "string", format: "date-time" },
    status: { type: "string", enum: statuses },
    customer_id: { type: "string" },
    region: { type: "string" },
    channel: { type: "string" },
    currency: { type: "string", pattern: "^[A-Z]{3}$" },
    items: {
      type: "array",
      items: {
        type: "object",
        properties: { sku: { type: "string" }, qty: { type: "integer", minimum: 1 }, unit_price: { type: "number", minimum: 0 } },
        required: ["sku", "qty", "unit_price"],
      },
    },
    subtotal: { type: "number" },
    shipping: { type: "number" },
    total: { type: "number" },
    tags: { type: "array", items: { type: "string" } },
    note: { type: "string" },
  },
  required: ["id", "created_at", "status", "customer_id", "region", "currency", "items", "total"],
};

const catalogue = {
  category: "bench",
  description: "Benchmark fixtures: a large document for programs to filter",
  $defs: { Order },
  tools: [
    {
      name: "export_orders",
      summary: "Export every order of the fixture shop as one JSON document (about 1 MB).",
      description:
        "Returns all orders of the fixture shop in one document: id, creation time, status, customer id, region, channel, currency, line items, totals, tags and a delivery note. The document is large on purpose: filter it in your program and return only what you need.",
      inputSchema: { type: "object", properties: { region: { type: "string", description: "Accepted for realism; the fixture returns every order." } } },
      outputSchema: {
        type: "object",
        properties: {
          shop: { type: "string" },
          generated: { type: "string", format: "date-time" },
          count: { type: "integer" },
          orders: { type: "array", items: { $ref: "#/$defs/Order" } },
        },
        required: ["count", "orders"],
      },
      annotations: { readOnly: true, idempotent: true },
      examples: [{ title: "Every order", args: {}, result }],
      notes: "Generated by testdata/peers/gen-catalog.mjs (seeded, deterministic); used by make bench-peers.",
    },
  ],
};

const text = JSON.stringify(catalogue) + "\n";
if (process.argv.includes("--check")) {
  let old = "";
  try {
    old = readFileSync(out, "utf8");
  } catch {}
  if (old !== text) {
    console.error(`${out} is stale: run node gen-catalog.mjs`);
    process.exit(1);
  }
} else {
  writeFileSync(out, text);
  console.error(`wrote ${out}: ${text.length} bytes, result ${JSON.stringify(result).length} bytes`);
}
