// The seed's TypeScript sketch (seeds/chio-hitl-protocol.txt, "TypeScript
// Sketch"), run against a real chiod.
//
// `sketch` below is the seed's code, unchanged except that it sits in a
// function (its `return;` needs one) which receives the `workflow` it
// parks into. It compiles under `strict` against the shipped types. The
// workflow here persists the parked call to a file; the test then plays the
// later resumption: the Finance Lead approves with the real
// `chio approval approve … --key examples/keys/finance-lead.pem` (or signs a
// token with this SDK), and a fresh client awaits (or resumes with the
// token) and gets the output.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";

import { ChioClient, isPendingApproval, isToolDenied } from "@chio-protocol/sdk";
import { PrivateKey, signApproval, signDenial, type Allowed } from "@chio-protocol/sdk";

import { FINANCE_LEAD_KEY, chiod, stopChiod, withEnv, type Agent } from "./harness.js";

after(stopChiod);

interface Workflow {
  park(p: { approvalRequestId: string; deadline: Date | undefined }): Promise<void>;
}

// ---- the seed's sketch -----------------------------------------------------
async function sketch(workflow: Workflow): Promise<void> {
const client = ChioClient.fromEnv();

const result = await client.callTool({
  server: "payment-server",
  tool: "issue_refund",
  arguments: {
    customer_id: "cust-9012",
    amount: 450,
    currency: "USD",
  },
  governedIntent: {
    purpose: "Customer requested refund for order #8834",
    maxAmount: { units: 450, currency: "USD" },
  },
});

if (isPendingApproval(result)) {
  // The agent does not see the token itself; it sees a request id
  // and a deadline. Hand off to whatever workflow engine resumes
  // the call when the channel posts back the signed token.
  await workflow.park({
    approvalRequestId: result.approvalRequestId,
    deadline: result.deadline,
  });
  return;
}

if (isToolDenied(result)) {
  throw new Error(`denied: ${result.reason}`);
}

console.log("refund issued:", result.output);
}
// ---- end of the seed's sketch ------------------------------------------------

/** A workflow engine reduced to its essence: the parked call survives in a file. */
class FileWorkflow implements Workflow {
  constructor(readonly file: string) {}
  async park(p: { approvalRequestId: string; deadline: Date | undefined }): Promise<void> {
    writeFileSync(this.file, JSON.stringify(p));
  }
  parked(): { approvalRequestId: string; deadline: string } {
    return JSON.parse(readFileSync(this.file, "utf8"));
  }
}

/** Run the sketch as agent; returns what it logged and the workflow it parked into. */
async function runSketch(agent: Agent): Promise<{ logged: unknown[][]; workflow: FileWorkflow }> {
  const workflow = new FileWorkflow(join(agent.keyFile, "..", "workflow.json"));
  const logged: unknown[][] = [];
  const log = console.log;
  console.log = (...args: unknown[]) => void logged.push(args);
  try {
    await withEnv(agent.env, () => sketch(workflow));
  } finally {
    console.log = log;
  }
  return { logged, workflow };
}

/** The demo tool derives its refund id from the request id. */
function refundId(requestId: string): string {
  return "rf-" + createHash("sha256").update(requestId).digest("hex").slice(0, 16);
}

function assertRefunded(r: Allowed): void {
  const out = r.output as Record<string, unknown>;
  assert.equal(out["status"], "issued");
  assert.deepEqual([out["amount"], out["currency"], out["customer_id"]], [450, "USD", "cust-9012"]);
  assert.equal(out["refund_id"], refundId(r.requestId));
}

test("allowed: the sketch logs the refund", async () => {
  const agent = await (await chiod()).newAgent("refunds-auto");
  const { logged } = await runSketch(agent);
  assert.equal(logged.length, 1);
  const [label, output] = logged[0] as [string, Record<string, unknown>];
  assert.equal(label, "refund issued:");
  assert.equal(output["status"], "issued");
  assert.equal(output["amount"], 450);
});

test("pending: parked, approved with the chio CLI, awaited by a fresh client", async () => {
  const d = await chiod();
  const agent = await d.newAgent("refunds");
  const { logged, workflow } = await runSketch(agent);
  assert.equal(logged.length, 0); // parked, not executed
  const parked = workflow.parked();
  assert.match(parked.approvalRequestId, /^ar-/);
  assert.ok(Date.parse(parked.deadline) > Date.now());

  const approved = await d.approve(parked.approvalRequestId, "--note", "verified");
  assert.match(approved.stdout, new RegExp(`approved ${parked.approvalRequestId}`));
  // Later, elsewhere: only the persisted id and the agent's key are needed.
  const done = await withEnv(agent.env, () => ChioClient.fromEnv().awaitApproval(parked.approvalRequestId, { timeoutMs: 30_000 }));
  assert.equal(done.status, "allowed");
  assertRefunded(done as Allowed);
  assert.equal(done.approval?.approverName, "Finance Lead");
  assert.equal(done.approval?.note, "verified");
});

test("pending: resumed with the token the channel posts back", async () => {
  const d = await chiod();
  const agent = await d.newAgent("refunds");
  const { workflow } = await runSketch(agent);
  const { approvalRequestId } = workflow.parked();
  // The channel: the approver reads the request and signs with this SDK.
  const req = await d.nextRequest(agent);
  assert.equal(req.approval_id, approvalRequestId);
  const token = signApproval(req, PrivateKey.load(FINANCE_LEAD_KEY));
  const done = await withEnv(agent.env, () => ChioClient.fromEnv().resumeWithApproval({ approvalToken: token, approvalRequestId }));
  assert.equal(done.status, "allowed");
  assertRefunded(done as Allowed);
});

test("pending: a human denies", async () => {
  const d = await chiod();
  const agent = await d.newAgent("refunds");
  const { workflow } = await runSketch(agent);
  const req = await d.nextRequest(agent);
  const token = signDenial(req, PrivateKey.load(FINANCE_LEAD_KEY), "duplicate of refund rf-1");
  const done = await withEnv(agent.env, () => ChioClient.fromEnv().resumeWithApproval({ approvalToken: token }));
  assert.ok(isToolDenied(done));
  assert.equal(done.approvalRequestId, workflow.parked().approvalRequestId);
  assert.deepEqual([done.guard, done.reason], ["human-approval", "duplicate of refund rf-1"]);
});

test("denied by policy: the sketch throws", async () => {
  const agent = await (await chiod()).newAgent("echo"); // no refund grant
  await assert.rejects(runSketch(agent), /^Error: denied: /);
});
