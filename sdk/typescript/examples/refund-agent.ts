// A refund agent whose approvals outlive it.
//
//   node refund-agent.js request ORDER AMOUNT   # call; park it if a human must decide
//   node refund-agent.js resume [SECONDS]       # later, from any process: finish parked calls
//   node refund-agent.js cancel ORDER REASON    # withdraw the order's parked call
//
// CHIO_URL, CHIO_KEY and CHIO_CAPABILITY say where chiod is and who the agent
// is. Parked calls live in workflow.json, standing in for your workflow
// engine: a Temporal signal, a LangGraph interrupt, a job queue.

import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";

import { ChioClient, ChioError, isPendingApproval, isToolDenied, type Allowed, type ToolDenied } from "@chio-protocol/sdk";

interface Parked {
  approvalId: string;
  orderId: string;
  deadline?: string;
  state: string;
}

const STORE = "workflow.json";

function load(): Parked[] {
  return existsSync(STORE) ? (JSON.parse(readFileSync(STORE, "utf8")) as Parked[]) : [];
}

function save(parked: Parked[]): void {
  writeFileSync(STORE + ".tmp", JSON.stringify(parked, null, 2));
  renameSync(STORE + ".tmp", STORE); // a crash leaves the old file or the new, never half of one
}

// One request id per order, made once and kept: running this step again
// never refunds twice. The random part keeps other agents from using the id
// first (request ids are one namespace for every agent of a chiod).
function requestIdFor(orderId: string): string {
  const file = "request-ids.json";
  const ids = existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as Record<string, string>) : {};
  if (!ids[orderId]) {
    ids[orderId] = `refund-order-${orderId}-${randomBytes(8).toString("hex")}`;
    writeFileSync(file + ".tmp", JSON.stringify(ids, null, 2));
    renameSync(file + ".tmp", file);
  }
  return ids[orderId]!;
}

async function request(orderId: string, amount: number): Promise<void> {
  const client = ChioClient.fromEnv();
  const result = await client.callTool({
    server: "demo",
    tool: "issue_refund",
    arguments: { customer_id: "cust-9012", amount, currency: "USD" },
    governedIntent: {
      purpose: `Customer requested refund for order #${orderId}`,
      maxAmount: { units: amount, currency: "USD" },
    },
    requestId: requestIdFor(orderId),
  });
  if (isPendingApproval(result)) {
    const parked = load().filter((p) => p.approvalId !== result.approvalRequestId);
    const entry: Parked = { approvalId: result.approvalRequestId, orderId, state: "pending" };
    if (result.deadline) entry.deadline = result.deadline.toISOString();
    save([...parked, entry]);
    console.log(`order ${orderId}: parked ${result.approvalRequestId} until ${entry.deadline}: ${result.summary}`);
    return;
  }
  report(orderId, result);
}

async function resume(seconds: number): Promise<void> {
  // A new process: nothing but the agent's key and the parked ids.
  const client = ChioClient.fromEnv();
  const parked = load();
  for (const p of parked.filter((p) => p.state === "pending")) {
    try {
      const result = await client.awaitApproval(p.approvalId, { timeoutMs: seconds * 1000 });
      report(p.orderId, result);
      p.state = result.status;
      save(parked);
    } catch (e) {
      if (!(e instanceof ChioError && e.code === "timed_out")) throw e;
      console.log(`order ${p.orderId}: still waiting for a human`);
    }
  }
}

async function cancel(orderId: string, reason: string): Promise<void> {
  // The customer withdrew the order: nobody needs to decide any more.
  const client = ChioClient.fromEnv();
  const parked = load();
  for (const p of parked.filter((p) => p.orderId === orderId && p.state === "pending")) {
    let result: Allowed | ToolDenied;
    try {
      result = await client.cancel(p.approvalId, reason); // signed by the agent key
    } catch (e) {
      if (!(e instanceof ChioError && e.code === "conflict")) throw e;
      // A human decided first, and that decision stands: see how it ended.
      result = await client.awaitApproval(p.approvalId);
    }
    report(orderId, result);
    p.state = result.status;
    save(parked);
  }
}

function report(orderId: string, result: Allowed | ToolDenied): void {
  if (isToolDenied(result) && result.status === "cancelled") {
    console.log(`order ${orderId}: cancelled: ${result.reason}`);
  } else if (isToolDenied(result)) {
    console.log(`order ${orderId}: ${result.status} by ${result.guard}: ${result.reason}`);
  } else if (result.failed) {
    // execution: "tool_error" (it ran and failed), "not_delivered" (it never
    // saw the call) or "unknown" (it may have run: check before retrying).
    console.log(`order ${orderId}: the refund failed (${result.execution}): ${result.toolError}`);
  } else {
    const by = result.approval ? ` (approved by ${result.approval.approverName})` : "";
    console.log(`order ${orderId}: refund ${(result.output as { refund_id: string }).refund_id} issued${by}`);
  }
}

const [cmd, ...args] = process.argv.slice(2);
if (cmd === "request" && args.length === 2) await request(args[0]!, Number(args[1]));
else if (cmd === "resume") await resume(args[0] ? Number(args[0]) : 600);
else if (cmd === "cancel" && args.length === 2) await cancel(args[0]!, args[1]!);
else {
  console.error("usage: refund-agent request ORDER AMOUNT | resume [SECONDS] | cancel ORDER REASON");
  process.exit(2);
}
