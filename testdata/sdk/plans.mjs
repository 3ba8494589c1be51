// The official MCP TypeScript SDK client as the host of codecell's dry
// runs, memoisation and cache, over Streamable HTTP, as two principals
// (static bearer tokens). Alice's client answers sampling and elicitation.
// The server runs with the fixture catalogue, [approval] required_for =
// ["destructive"], [cache.memoize] "fs.read_text_file" and the reference
// filesystem server as the upstream "fs" on DIR; a second server, with a
// plan_ttl of one second, serves the expiry check (see
// cmd/codecell/plans_node_test.go). One JSON line per check; exits
// non-zero when any fails.
//
//   node plans.mjs URL SHORT_TTL_URL ALICE_TOKEN BOB_TOKEN DIR
import { writeFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateMessageRequestSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [target, shortTarget, aliceToken, bobToken, dir] = process.argv.slice(2);

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

// The user's answer to the approvals codecell asks for.
let approvalAnswer = "decline";
const asked = [];

async function connect(url, token, host) {
  const client = new Client({ name: "codecell-sdk-plans", version: "1.0.0" },
    host ? { capabilities: { sampling: {}, elicitation: {} } } : undefined);
  if (host) {
    client.setRequestHandler(CreateMessageRequestSchema, async req => {
      const last = req.params.messages[req.params.messages.length - 1];
      return { role: "assistant", content: { type: "text", text: "echo:" + last.content.text }, model: "sdk-model", stopReason: "endTurn" };
    });
    client.setRequestHandler(ElicitRequestSchema, async req => {
      asked.push(req.params.message);
      return approvalAnswer === "accept" ? { action: "accept", content: {} } : { action: approvalAnswer };
    });
  }
  await client.connect(new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: "Bearer " + token } },
  }));
  return client;
}

// call sends execute_code and returns its run record, checking that
// isError agrees with the record's status.
async function call(client, args) {
  const res = await client.callTool({ name: "execute_code", arguments: args }, undefined, { timeout: 60000 });
  const rec = res.structuredContent;
  assert(rec && typeof rec.status === "string", "no run record: " + JSON.stringify(res));
  assert(!!res.isError === (rec.status !== "ok"), `isError ${res.isError} for status ${rec.status}`);
  rec.text = res.content.map(c => c.text || "").join("");
  return rec;
}
const run = (client, code, extra = {}) => call(client, { code, ...extra });
const plan = (client, code) => call(client, { code, mode: "plan" });
const commit = (client, planID) => call(client, { plan_id: planID });

function wantKind(rec, kind) {
  assert(rec.status === "error" && rec.error && rec.error.kind === kind, `want error kind ${kind}: ` + JSON.stringify(rec));
}

const alice = await connect(target, aliceToken, true);
const bob = await connect(target, bobToken, false);

// The e-mail address the fixture CRM returns for c_8812; the filter
// tokenises it wherever the model would read it.
const email = "anna.lindqvist@northwind.se";
const threeWrites = `
const contact = await crm.get_contact({id: "c_8812"});
const a = await workspace.write({path: "plan/a.txt", data: "one"});
const b = await workspace.write("plan/b.txt", "two");
const c = await workspace.write({path: "plan/c.txt", data: contact.email});
const files = (await workspace.list({prefix: "plan/"})).files ?? [];
return {a, b, c, files: files.length};`;

let planned = null;
await check("plan: three writes shown, filtered, nothing written", async () => {
  const rec = await plan(alice, threeWrites);
  assert(rec.status === "ok", JSON.stringify(rec));
  const p = rec.plan;
  assert(p && /^plan_/.test(p.plan_id) && Date.parse(p.expires_at) > Date.now(), "plan: " + JSON.stringify(p));
  assert(p.steps.length === 3, "steps: " + JSON.stringify(p.steps));
  p.steps.forEach((s, i) => {
    const path = "plan/" + "abc"[i] + ".txt";
    assert(s.step === i + 1 && s.tool === "workspace.write" && s.args.path === path, `step ${i + 1}: ` + JSON.stringify(s));
  });
  assert(/^⟦email:[0-9a-f]+⟧$/.test(p.steps[2].args.data), "step 3's data is not a token: " + JSON.stringify(p.steps[2]));
  assert(!rec.text.includes(email) && !JSON.stringify(rec).includes(email), "the plan shows the address");
  const r = rec.result;
  assert(r.a.planned === true && r.a.id === 1 && r.b.id === 2 && r.c.planned === true && r.c.id === 3, "placeholders: " + JSON.stringify(r));
  assert(r.files === 0, "the dry run wrote files: " + JSON.stringify(r));
  const after = await run(alice, `return (await workspace.list({prefix: "plan/"})).files.length`);
  assert(after.status === "ok" && after.result === 0, "files after the dry run: " + JSON.stringify(after));
  planned = p;
  return { plan_id_prefix: p.plan_id.slice(0, 5), steps: p.steps.map(s => s.tool + " " + s.args.path), token: p.steps[2].args.data, note: rec.note };
});

await check("plan: another principal's plan_id is not found", async () => {
  assert(planned, "no plan");
  wantKind(await commit(bob, planned.plan_id), "plan_not_found");
  const files = await run(alice, `return (await workspace.list({prefix: "plan/"})).files.length`);
  assert(files.result === 0, "bob's commit wrote alice's files");
});

await check("plan: committed exactly once, in order", async () => {
  assert(planned, "no plan");
  const rec = await commit(alice, planned.plan_id);
  assert(rec.status === "ok", JSON.stringify(rec));
  assert(rec.plan.plan_id === planned.plan_id && rec.plan.steps.map(s => s.status).join() === "ok,ok,ok", "outcomes: " + JSON.stringify(rec.plan));
  // The steps' results, in order: as JSON, or as the record's table.
  const shown = rec.result !== undefined ? JSON.stringify(rec.result) : rec.table;
  const at = ["a", "b", "c"].map(f => shown.indexOf(`plan/${f}.txt`));
  assert(at[0] >= 0 && at[0] < at[1] && at[1] < at[2], "results not in order: " + shown);
  const files = await run(alice, `
    const read = async p => (await workspace.read({path: p})).data;
    const list = (await workspace.list({prefix: "plan/"})).files;
    const email = (await crm.get_contact({id: "c_8812"})).email;
    const written = list.map(f => f.updated_at);
    return {paths: list.map(f => f.path), a: await read("plan/a.txt"), b: await read("plan/b.txt"),
      c_is_the_address: (await read("plan/c.txt")) === email,
      in_order: written.every((w, i) => i === 0 || Date.parse(written[i - 1]) <= Date.parse(w))};`);
  const f = files.result;
  assert(files.status === "ok" && f.paths.join() === "plan/a.txt,plan/b.txt,plan/c.txt" && f.a === "one" && f.b === "two", "files: " + JSON.stringify(files));
  assert(f.c_is_the_address === true, "plan/c.txt does not hold the address the token stood for");
  assert(f.in_order === true, "files not written in order: " + JSON.stringify(f));
  return { steps: rec.plan.steps.length, calls: rec.stats.tool_calls };
});

await check("plan: a second commit is refused", async () => {
  assert(planned, "no plan");
  const rec = await commit(alice, planned.plan_id);
  wantKind(rec, "plan_committed");
  return rec.error.message;
});

await check("plan: an expired plan is refused", async () => {
  const short = await connect(shortTarget, aliceToken, false);
  try {
    const rec = await plan(short, `await workspace.write({path: "late.txt", data: "late"}); return 1`);
    assert(rec.status === "ok" && rec.plan && rec.plan.plan_id, JSON.stringify(rec));
    const ttl = Date.parse(rec.plan.expires_at) - Date.now();
    await new Promise(r => setTimeout(r, Math.max(ttl, 0) + 1200));
    const late = await commit(short, rec.plan.plan_id);
    wantKind(late, "plan_expired");
    const files = await run(short, `return (await workspace.list({})).files.length`);
    assert(files.result === 0, "an expired plan wrote: " + JSON.stringify(files));
    return late.error.message;
  } finally {
    await short.close();
  }
});

// A destructive write asks for approval when the plan is committed, not
// when it is recorded.
for (const answer of ["decline", "accept"]) {
  await check(`plan: a destructive step asks approval at commit (${answer})`, async () => {
    const before = asked.length;
    const rec = await plan(alice, `return await crm.delete_contact({id: "c_9120"})`);
    assert(rec.status === "ok" && rec.plan.steps.length === 1 && asked.length === before, "dry run: " + JSON.stringify(rec) + " asked " + asked.slice(before));
    approvalAnswer = answer;
    const done = await commit(alice, rec.plan.plan_id);
    assert(asked.length === before + 1 && asked.at(-1).includes("crm.delete_contact"), "approval asked: " + asked.slice(before));
    if (answer === "decline") {
      wantKind(done, "plan_step_failed");
      assert(done.error.code === "approval_declined" && done.plan.steps[0].status === "error", JSON.stringify(done));
    } else {
      assert(done.status === "ok" && done.plan.steps[0].status === "ok", JSON.stringify(done));
    }
    return done.plan.steps[0];
  });
}

await check("sampling and elicitation in a run", async () => {
  approvalAnswer = "decline";
  const rec = await run(alice, `
    const text = (await llm.call({prompt: "plans", maxTokens: 20})).text;
    const asked = await approval.request("Go on with the plans?");
    return {text, action: asked.action};`);
  assert(rec.status === "ok" && rec.result.text === "echo:plans" && rec.result.action === "decline", JSON.stringify(rec));
  return rec.result;
});

// fs.read_text_file is memoised: the file changes on disk, and the run
// still reads what the upstream said the first time.
await check("memoize: cached calls counted in the trace", async () => {
  const ready = `return typeof fs !== "undefined" && typeof fs.read_text_file === "function"`;
  for (let i = 0; ; i++) {
    const rec = await run(alice, ready);
    if (rec.status === "ok" && rec.result === true) break;
    assert(i < 120, "the fs upstream did not connect: " + JSON.stringify(rec));
    await new Promise(r => setTimeout(r, 500));
  }
  const memo = dir + "/memo.txt", other = dir + "/other.txt";
  writeFileSync(memo, "first version\n");
  writeFileSync(other, "other file\n");
  const code = `
    const text = r => typeof r === "string" ? r : JSON.stringify(r);
    const a = await fs.read_text_file({path: ${JSON.stringify(memo)}});
    const b = await fs.read_text_file({path: ${JSON.stringify(memo)}});
    const c = await fs.read_text_file({path: ${JSON.stringify(other)}});
    return [text(a), text(b), text(c)];`;
  const one = await run(alice, code, { details: true });
  assert(one.status === "ok", JSON.stringify(one));
  const cachedOf = rec => rec.trace.filter(c => c.tool === "fs.read_text_file").map(c => !!c.cached).join();
  assert(cachedOf(one) === "false,true,false", "first run's trace: " + JSON.stringify(one.trace));
  assert(one.stats.cached_calls === 1 && one.stats.tool_calls === 3, "first run's stats: " + JSON.stringify(one.stats));
  const summary = one.calls.find(c => c.tool === "fs.read_text_file");
  assert(summary && summary.calls === 3 && summary.cached === 1, "first run's calls: " + JSON.stringify(one.calls));
  assert(one.result[0].includes("first version") && one.result[1] === one.result[0], "first run read: " + JSON.stringify(one.result));

  writeFileSync(memo, "second version\n");
  const two = await run(alice, code, { details: true });
  assert(two.status === "ok" && cachedOf(two) === "true,true,true" && two.stats.cached_calls === 3, "second run: " + JSON.stringify(two));
  assert(two.result[0].includes("first version"), "the second run called the upstream: " + JSON.stringify(two.result));

  // Another principal's calls are their own.
  const bobs = await run(bob, code, { details: true });
  assert(bobs.status === "ok" && cachedOf(bobs) === "false,true,false" && bobs.result[0].includes("second version"), "bob's run: " + JSON.stringify(bobs));
  return { first: one.stats, second: two.stats, bob: bobs.stats };
});

await check("cache: set, get and delete across runs", async () => {
  const set = await run(alice, `return await cache.set("report:q3", {total: 1234, rows: [1, 2, 3]}, {ttl: "5m"})`);
  assert(set.status === "ok" && Date.parse(set.result.expires_at) > Date.now(), "set: " + JSON.stringify(set));
  const got = await run(alice, `return await cache.get("report:q3")`);
  assert(got.status === "ok" && got.result.found === true && got.result.value.total === 1234 && got.result.value.rows.length === 3, "get: " + JSON.stringify(got));
  const bobs = await run(bob, `return await cache.get("report:q3")`);
  assert(bobs.status === "ok" && bobs.result.found === false, "bob reads alice's entry: " + JSON.stringify(bobs));
  const del = await run(alice, `return await cache.delete("report:q3")`);
  assert(del.status === "ok" && del.result.deleted === true, "delete: " + JSON.stringify(del));
  const gone = await run(alice, `return await cache.get("report:q3")`);
  assert(gone.status === "ok" && gone.result.found === false, "after delete: " + JSON.stringify(gone));
  return { expires_at: set.result.expires_at };
});

await alice.close();
await bob.close();
process.exit(failed ? 1 : 0);
