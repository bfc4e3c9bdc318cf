// The client against a real chiod, beyond the seed's sketch: waiting (also
// across a chiod restart), idempotent retries (and a retry that meets its
// call in flight), cancelling, confirm and ask, tool errors and input
// checks.

import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";

import {
  CanonicalJSONError,
  ChioClient,
  ChioError,
  NotSentError,
  PrivateKey,
  RawJSON,
  cancelProof,
  signApproval,
  statusProof,
  type Allowed,
  type CallResult,
  type ToolCall,
  type ToolDenied,
} from "@chio-protocol/sdk";

import { Chiod, FINANCE_LEAD_KEY, chiod, stopChiod, type Agent } from "./harness.js";

after(stopChiod);

const refund = (requestId?: string): ToolCall => ({
  server: "payment-server",
  tool: "issue_refund",
  arguments: { customer_id: "cust-9012", amount: 450, currency: "USD" },
  governedIntent: { purpose: "Refund order #8834", maxAmount: { units: 450, currency: "USD" } },
  ...(requestId ? { requestId } : {}),
});

const clientFor = (a: Agent, url?: string): ChioClient =>
  new ChioClient({ url: url ?? a.env["CHIO_URL"]!, keyFile: a.keyFile, capabilityFile: a.capabilityFile });

function pendingId(r: CallResult): string {
  assert.equal(r.status, "pending_approval");
  return (r as { approvalRequestId: string }).approvalRequestId;
}

const code = (c: string) => (e: unknown) => e instanceof ChioError && e.code === c;

test("await: the CLI approves while the agent waits", async () => {
  const d = await chiod();
  const c = clientFor(await d.newAgent("refunds"));
  const id = pendingId(await c.callTool(refund()));
  assert.equal((await c.status(id)).status, "pending_approval");
  let settled = false;
  const waiter = c.awaitApproval(id, { timeoutMs: 60_000 }).finally(() => (settled = true));
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(settled, false);
  await d.approve(id, "--note", "ok");
  const done = (await waiter) as Allowed;
  assert.equal(done.status, "allowed");
  assert.equal((done.output as Record<string, unknown>)["amount"], 450);
  assert.deepEqual([done.approval?.approverName, done.approval?.note], ["Finance Lead", "ok"]);
  // A call that already ended answers at once, by either id.
  assert.deepEqual((await c.awaitApproval(done.requestId, { timeoutMs: 5_000 })).status, "allowed");
});

test("await: a timeout leaves the call pending; an abort signal stops the wait", async () => {
  const c = clientFor(await (await chiod()).newAgent("refunds"));
  const id = pendingId(await c.callTool(refund()));
  const t0 = Date.now();
  await assert.rejects(c.awaitApproval(id, { timeoutMs: 500 }), code("timed_out"));
  assert.ok(Date.now() - t0 < 5_000);
  await assert.rejects(c.awaitApproval(id, { signal: AbortSignal.timeout(300) }), { name: "TimeoutError" });
  assert.equal((await c.status(id)).status, "pending_approval");
});

test("await across a chiod restart", async () => {
  const d = await new Chiod().start();
  try {
    const c = clientFor(await d.newAgent("refunds"));
    const id = pendingId(await c.callTool(refund()));
    let settled = false;
    const waiter = c.awaitApproval(id, { timeoutMs: 60_000 }).finally(() => (settled = true));
    await new Promise((r) => setTimeout(r, 300));
    await d.stop();
    await new Promise((r) => setTimeout(r, 500)); // the waiter reconnects meanwhile
    assert.equal(settled, false);
    await d.start();
    await d.approve(id);
    assert.equal((await waiter).status, "allowed");
  } finally {
    await d.close();
  }
});

test("resume with the same token twice reports the same end", async () => {
  const c = clientFor(await (await chiod()).newAgent("refunds"));
  const id = pendingId(await c.callTool(refund()));
  const req = await c.approval(id); // the agent reads its own request
  const token = signApproval(req, PrivateKey.load(FINANCE_LEAD_KEY));
  const first = (await c.resumeWithApproval({ approvalToken: token, approvalRequestId: id })) as Allowed;
  const second = (await c.resumeWithApproval({ approvalToken: Promise.resolve(JSON.parse(token)) })) as Allowed;
  assert.deepEqual(second.output, first.output);
  await assert.rejects(c.resumeWithApproval({ approvalToken: token, approvalRequestId: "ar-other" }), code("bad_request"));
});

/**
 * A proxy in front of chiod that fails POST /v1/calls as told: "drop"
 * forwards and then closes without answering, "502" forwards and then
 * answers a gateway's 502 page, "503" answers chiod's 503 (not forwarded),
 * "dispatching" forwards and answers as chiod does a retry that meets the
 * call still in flight (202, status dispatching, no approval id). Every
 * request's method and path is kept in requests.
 */
async function flakyProxy(target: string, faults: string[]): Promise<{ url: string; bodies: string[]; requests: string[]; close: () => void }> {
  const bodies: string[] = [];
  const requests: string[] = [];
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString("utf8");
    requests.push(`${req.method} ${req.url}`);
    let fault = "pass";
    if (req.method === "POST" && req.url === "/v1/calls") {
      bodies.push(body);
      fault = faults.shift() ?? "pass";
    }
    if (fault === "503") {
      res.writeHead(503, { "Content-Type": "application/json" }).end('{"error":"unavailable","message":"injected by the test proxy"}');
      return;
    }
    const headers: Record<string, string> = {};
    for (const h of ["content-type", "accept", "authorization", "chio-proof", "idempotency-key"]) {
      const v = req.headers[h];
      if (typeof v === "string") headers[h] = v;
    }
    const init: RequestInit = { method: req.method!, headers };
    if (body) init.body = body;
    const up = await fetch(target + req.url, init);
    let text = await up.text();
    let status = up.status;
    if (fault === "drop") {
      req.socket.destroy();
      return;
    }
    if (fault === "502") {
      // A gateway that forwarded the call and lost chiod's answer.
      res.writeHead(502, { "Content-Type": "text/html" }).end("<html><body><h1>502 Bad Gateway</h1></body></html>");
      return;
    }
    if (fault === "dispatching") {
      const out = JSON.parse(text) as Record<string, unknown>;
      status = 202;
      text = JSON.stringify({ status: "dispatching", request_id: out["request_id"], receipt_id: out["receipt_id"] });
    }
    res.writeHead(status, { "Content-Type": "application/json" }).end(text);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, bodies, requests, close: () => server.close() };
}

function ledger(d: Chiod): Array<{ request_id: string }> {
  try {
    return readFileSync(join(d.dataDir, "builtin", "ledger.jsonl"), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
  } catch {
    return [];
  }
}

test("retries: a lost answer is retried with the same request id; the tool runs once", async () => {
  const d = await chiod();
  const agent = await d.newAgent("refunds-auto");
  const p = await flakyProxy(d.url, ["drop", "pass"]);
  try {
    const r = await clientFor(agent, p.url).callTool(refund(`retry-${Date.now()}`));
    assert.equal(r.status, "allowed");
    assert.equal(p.bodies.length, 2);
    assert.equal(p.bodies[0], p.bodies[1]); // same id, content and proof
    assert.equal(ledger(d).filter((e) => e.request_id === r.requestId).length, 1);
  } finally {
    p.close();
  }
});

test("retries: lost answers are outcome_unknown naming the request id, never unavailable (nothing allowed)", async () => {
  // The refund ran at chiod on the first attempt; every answer was lost
  // (dropped, or a gateway's 502 after forwarding), or the last attempts met
  // chiod's own 503. "unavailable" promises nothing was allowed: untrue here.
  const d = await chiod();
  const agent = await d.newAgent("refunds-auto");
  for (const faults of [Array(4).fill("drop"), Array(4).fill("502"), ["drop", "503", "503", "503"]]) {
    const p = await flakyProxy(d.url, faults);
    const rid = `lost-${faults[0]}-${faults[1]}-${Date.now()}`;
    try {
      await assert.rejects(
        clientFor(agent, p.url).callTool(refund(rid)),
        (e: unknown) => e instanceof ChioError && e.code === "outcome_unknown" && e.requestId === rid,
        `faults ${faults.join(",")}`,
      );
      assert.equal(p.bodies.length, 4);
      assert.equal(ledger(d).filter((e) => e.request_id === rid).length, 1, "the refund was issued exactly once");
    } finally {
      p.close();
    }
  }
});

test("retries: 503s are retried, a few times", async () => {
  const d = await chiod();
  const agent = await d.newAgent("refunds-auto");
  const p = await flakyProxy(d.url, ["503", "503"]);
  const q = await flakyProxy(d.url, Array(10).fill("503"));
  try {
    assert.equal((await clientFor(agent, p.url).callTool(refund())).status, "allowed");
    assert.equal(p.bodies.length, 3);
    await assert.rejects(clientFor(agent, q.url).callTool(refund()), (e: unknown) => e instanceof ChioError && e.code === "unavailable" && e.status === 503);
    assert.equal(q.bodies.length, 4);
  } finally {
    p.close();
    q.close();
  }
});

test("retries: a retry that meets the call in flight waits for its outcome", async () => {
  // chiod answers "dispatching" with no approval id when a retry arrives
  // while the call it already allowed is still running: that is no human
  // wait, and callTool reports the call's outcome instead.
  const d = await chiod();
  const p = await flakyProxy(d.url, ["dispatching"]);
  try {
    const r = (await clientFor(await d.newAgent("refunds-auto"), p.url).callTool(refund(`inflight-${Date.now()}`))) as Allowed;
    assert.equal(r.status, "allowed");
    assert.deepEqual([(r.output as Record<string, unknown>)["amount"], r.execution, r.failed], [450, "succeeded", false]);
    assert.ok(p.requests.includes(`GET /v1/calls/${r.requestId}?wait=30000ms`), p.requests.join("\n"));
  } finally {
    p.close();
  }
});

test("a replayed request id gets the first outcome; other content is a conflict", async () => {
  const agent = await (await chiod()).newAgent("refunds");
  const rid = `run-${Date.now()}:refund`;
  const first = await clientFor(agent).callTool(refund(rid));
  const again = await clientFor(agent).callTool(refund(rid)); // a restarted run repeating its step
  assert.equal(pendingId(again), pendingId(first));
  assert.deepEqual((again as { deadline?: Date }).deadline, (first as { deadline?: Date }).deadline);
  const other = refund(rid);
  other.arguments = { customer_id: "cust-9012", amount: 451, currency: "USD" };
  await assert.rejects(clientFor(agent).callTool(other), code("conflict"));
});

/** A stored receipt, read with the operator's token. */
async function receipt(d: Chiod, id: string): Promise<{ decision: Record<string, unknown>; metadata: Record<string, unknown> }> {
  const r = await fetch(`${d.url}/v1/receipts/${id}`, { headers: { Authorization: "Bearer " + d.adminToken } });
  assert.equal(r.status, 200);
  return (await r.json()) as { decision: Record<string, unknown>; metadata: Record<string, unknown> };
}

async function parked(d: Chiod): Promise<{ agent: Agent; c: ChioClient; requestId: string; approvalId: string; receiptId: string }> {
  const agent = await d.newAgent("refunds");
  const c = clientFor(agent);
  const r = await c.callTool(refund());
  return { agent, c, requestId: r.requestId, approvalId: pendingId(r), receiptId: r.receiptId };
}

test("cancel: the agent withdraws its parked call with its key; awaiters see cancelled", async () => {
  const d = await chiod();
  const { c, requestId, approvalId, receiptId } = await parked(d);
  let settled = false;
  const waiter = c.awaitApproval(approvalId, { timeoutMs: 60_000 }).finally(() => (settled = true));
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(settled, false);
  const done = await c.cancel(approvalId, "customer withdrew the request");
  assert.deepEqual([done.status, done.reason, done.requestId], ["cancelled", "customer withdrew the request", requestId]);
  // Whoever waits learns it: a waiter already parked, a later await by
  // either id, a status read.
  for (const got of [await waiter, await c.awaitApproval(approvalId, { timeoutMs: 5_000 }), await c.awaitApproval(requestId, { timeoutMs: 5_000 }), await c.status(requestId)]) {
    const g = got as ToolDenied;
    assert.deepEqual([g.status, g.reason, g.receiptId], ["cancelled", "customer withdrew the request", done.receiptId]);
  }
  const req = (await c.approval(approvalId)) as unknown as { status: string; resolution: { decided_by: string } };
  assert.deepEqual([req.status, req.resolution.decided_by], ["cancelled", "agent"]);
  const rc = await receipt(d, done.receiptId);
  assert.deepEqual(rc.decision, { verdict: "cancelled", reason: "customer withdrew the request" });
  assert.deepEqual([rc.metadata["cancelled_by"], rc.metadata["previous_receipt_id"]], ["agent", receiptId]);
  assert.equal(ledger(d).filter((e) => e.request_id === requestId).length, 0); // the tool never ran
  await assert.rejects(c.cancel(approvalId, "again"), code("conflict"));
});

test("cancel: an operator with the admin token", async () => {
  const d = await chiod();
  const { c, approvalId } = await parked(d);
  const done = await new ChioClient({ url: d.url, bearer: d.adminToken }).cancel(approvalId, "duplicate of order #8833");
  assert.deepEqual([done.status, done.reason], ["cancelled", "duplicate of order #8833"]);
  assert.equal((await receipt(d, done.receiptId)).metadata["cancelled_by"], "admin");
  const got = (await c.awaitApproval(approvalId, { timeoutMs: 5_000 })) as ToolDenied;
  assert.deepEqual([got.status, got.reason], ["cancelled", "duplicate of order #8833"]);
});

test("cancel: a read proof cannot cancel, nor another agent", async () => {
  const d = await chiod();
  const { agent, c, requestId, approvalId } = await parked(d);
  const other = await d.newAgent("refunds");
  const key = PrivateKey.load(agent.keyFile);
  for (const [name, proof] of [
    ["the agent's read proof for the approval", statusProof(key, approvalId)],
    ["the agent's read proof for the call", statusProof(key, requestId)],
    ["a cancel proof for another reason", cancelProof(key, approvalId, "another reason")],
    ["another agent's cancel proof", cancelProof(PrivateKey.load(other.keyFile), approvalId, "withdrawn")],
  ] as const) {
    const r = await fetch(`${d.url}/approvals/${approvalId}/cancel`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "Chio-Proof": proof },
      body: '{"reason":"withdrawn"}',
    });
    assert.deepEqual([r.status, ((await r.json()) as { error: string }).error], [401, "unauthorized"], name);
  }
  await assert.rejects(clientFor(other).cancel(approvalId, "withdrawn"), code("unauthorized")); // signing properly, but not its call
  assert.equal((await c.status(approvalId)).status, "pending_approval");
});

test("cancel after approval is a conflict; the decision stands", async () => {
  const d = await chiod();
  const { c, approvalId } = await parked(d);
  await d.approve(approvalId);
  await assert.rejects(c.cancel(approvalId, "too late"), (e: unknown) => e instanceof ChioError && e.code === "conflict" && e.status === 409);
  const done = (await c.awaitApproval(approvalId, { timeoutMs: 30_000 })) as Allowed;
  assert.equal(done.status, "allowed");
  assert.equal((done.output as Record<string, unknown>)["amount"], 450);
});

test("cancel: bad input is refused before anything is sent", async () => {
  const agent = await (await chiod()).newAgent("refunds");
  const c = new ChioClient({ url: "http://127.0.0.1:9", keyFile: agent.keyFile }); // nothing listens
  for (const [id, reason] of [["req-1", "withdrawn"], ["", "withdrawn"], ["ar-1", ""], ["ar-1", " \t\n"]]) {
    await assert.rejects(c.cancel(id!, reason!), code("bad_request"), `${id} ${JSON.stringify(reason)}`);
  }
  await assert.rejects(c.cancel("ar-1", "\ud800"), CanonicalJSONError);
  await assert.rejects(new ChioClient({ url: "http://127.0.0.1:9" }).cancel("ar-1", "withdrawn"), code("unauthorized"));
  await assert.rejects(c.cancel("ar-1", "withdrawn"), code("transport"));
});

test("confirm: yes and no", async () => {
  const d = await chiod();
  const agent = await d.newAgent("confirm");
  const c = clientFor(agent);
  for (const [verb, extra, want] of [["approve", [], true], ["deny", ["--reason", "not today"], false]] as const) {
    const asked = c.confirm("Deploy to production?", { env: "prod" }, { timeoutMs: 60_000 });
    const req = await d.nextRequest(agent);
    assert.equal(req.kind, "confirm");
    await d.chio("approval", verb, req.approval_id, "--key", FINANCE_LEAD_KEY, ...extra);
    assert.equal(await asked, want);
  }
});

test("ask: answers, and a decline", async () => {
  const d = await chiod();
  const agent = await d.newAgent("ask");
  const c = clientFor(agent);
  const asked = c.ask("New project", [
    { id: "framework", text: "Which framework?", type: "single", options: ["react", "vue"], allow_other: true },
    { id: "features", text: "Enable:", type: "multi", options: ["auth", "payments"] },
    { id: "name", text: "Project name?", type: "text" },
  ], { timeoutMs: 60_000, requestId: `ask-${Date.now()}` });
  const req = await d.nextRequest(agent);
  await d.approve(req.approval_id, "--answers", '{"framework":"svelte","features":["auth","payments"],"name":"Zoë"}');
  assert.deepEqual({ ...(await asked) }, { framework: ["svelte"], features: ["auth", "payments"], name: ["Zoë"] });

  // The handler is attached now: the rejection may come before the CLI returns.
  const declined = assert.rejects(c.ask("Again?", [{ id: "name", text: "Name?", type: "text" }], { timeoutMs: 60_000 }), code("declined"));
  const req2 = await d.nextRequest(agent);
  await d.chio("approval", "deny", req2.approval_id, "--key", FINANCE_LEAD_KEY, "--reason", "no");
  await declined;
});

test("confirm without a grant is denied by policy", async () => {
  const c = clientFor(await (await chiod()).newAgent("echo"));
  await assert.rejects(c.confirm("Deploy?", undefined, { timeoutMs: 10_000 }), code("denied_by_policy"));
});

test("a tool that fails is allowed, with toolError and execution tool_error", async () => {
  const d = await chiod();
  const c = clientFor(await d.newAgent("files"));
  const r = (await c.callTool({ server: "demo", tool: "delete_file", arguments: { path: "no/such/file" } })) as Allowed;
  assert.deepEqual([r.status, r.toolError, r.execution, r.failed], ["allowed", "not found", "tool_error", true]);
  // The failure has its own receipt, chained to the allow receipt.
  const rc = await receipt(d, r.receiptId);
  assert.deepEqual([rc.decision["verdict"], rc.metadata["execution"]], ["incomplete", "tool_error"]);
  // Read back later, it says the same.
  const again = (await c.status(r.requestId)) as Allowed;
  assert.deepEqual([again.toolError, again.execution, again.failed], ["not found", "tool_error", true]);
  const ok = (await clientFor(await d.newAgent("echo")).callTool({ server: "demo", tool: "echo", arguments: { text: "hi" } })) as Allowed;
  assert.deepEqual([ok.execution, ok.failed, ok.toolError], ["succeeded", false, undefined]);
});

test("RawJSON arguments travel as written", async () => {
  const c = clientFor(await (await chiod()).newAgent("echo"));
  const r = await c.callTool({ server: "demo", tool: "echo", arguments: new RawJSON('{"text": "caf\\u00e9 \\u2028", "n": 1.50}') });
  assert.equal(r.status, "allowed");
  assert.match(JSON.stringify((r as Allowed).output), /café \u2028/);
});

test("bad input is refused before anything is sent", async () => {
  const agent = await (await chiod()).newAgent("echo");
  const c = new ChioClient({ url: "http://127.0.0.1:9", keyFile: agent.keyFile, capabilityFile: agent.capabilityFile }); // nothing listens
  const refusedWith = (reason: string) => (e: unknown) => e instanceof CanonicalJSONError && e.reason === reason;
  await assert.rejects(c.callTool({ server: "demo", tool: "echo", arguments: { n: 2 ** 53 + 2 } }), refusedWith("unsafe_number"));
  await assert.rejects(c.callTool({ server: "demo", tool: "echo", arguments: { n: NaN } }), refusedWith("number_range"));
  await assert.rejects(c.callTool({ server: "demo", tool: "echo", arguments: { s: "\ud800" } }), refusedWith("invalid"));
  // chiod refuses member names that differ only in case: so does the SDK, first.
  await assert.rejects(c.callTool({ server: "demo", tool: "echo", arguments: { amount: 1, AMOUNT: 9 } }), refusedWith("duplicate_key"));
  assert.throws(() => new RawJSON('{"o":{"cost":1,"co\\u017ft":9}}'), refusedWith("duplicate_key"));
  await assert.rejects(
    c.callTool({ server: "demo", tool: "echo", governedIntent: { purpose: "p", maxAmount: { units: 1, currency: "USD" }, context: { k: 1, "\u212a": 2 } } }),
    refusedWith("duplicate_key"),
  );
  assert.throws(() => new RawJSON('{"n": 9.007199254740993e15}'), refusedWith("inexact_number"));
  await assert.rejects(c.callTool({ server: "demo", tool: "echo", arguments: [1] as unknown as Record<string, unknown> }), code("bad_request"));
  await assert.rejects(c.callTool({ server: "demo", tool: "echo", requestId: "ar-reserved" }), code("bad_request"));
  // The wire's snake_case in a camelCase intent is a mistake, not silently dropped.
  await assert.rejects(
    c.callTool({ server: "demo", tool: "echo", governedIntent: { purpose: "p", max_amount: { units: 1, currency: "USD" } } as never }),
    /governedIntent has no field "max_amount"/,
  );
  await assert.rejects(
    c.callTool({ server: "demo", tool: "echo", requestId: "run-9:echo" }),
    // Port 9 is one Node's fetch blocks: the call was never sent.
    (e: unknown) => e instanceof NotSentError && e.code === "unavailable" && e.requestId === "run-9:echo" && /127\.0\.0\.1:9/.test(e.message),
  );
});

test("a capability for another key is refused at construction", async () => {
  const d = await chiod();
  const [a, b] = [await d.newAgent("echo"), await d.newAgent("echo")];
  assert.throws(() => new ChioClient({ url: d.url, keyFile: a.keyFile, capabilityFile: b.capabilityFile }), /subject/);
  await assert.rejects(new ChioClient({ url: d.url }).awaitApproval("req-x"), code("unauthorized"));
});
