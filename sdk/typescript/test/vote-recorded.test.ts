// chiod's 500 vote_recorded (internal/httpapi/errors.go,
// kernel/vote_recorded.go): the approver's vote IS recorded, a step after
// it failed. The SDK read it as "outcome_unknown" (it may have run; retry)
// and resumeWithApproval presented the spent token again.

import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, test } from "node:test";

import { ChioClient, ChioError, PrivateKey, VoteRecordedError, signApproval, type CallResult } from "@chio-protocol/sdk";

import { FINANCE_LEAD_KEY, chiod, stopChiod, type Agent } from "./harness.js";

after(stopChiod);

const clientFor = (a: Agent, url?: string): ChioClient =>
  new ChioClient({ url: url ?? a.env["CHIO_URL"]!, keyFile: a.keyFile, capabilityFile: a.capabilityFile });

/**
 * A proxy in front of the real chiod. POST /approvals/{id}/respond is
 * forwarded (chiod records the vote for real) and then answered as chiod
 * answers when a step after the vote's commit failed: 500 with its
 * envelope {"error":"vote_recorded","message":…}. Everything else passes
 * through. responds counts the respond POSTs.
 */
async function voteRecordedProxy(target: string): Promise<{ url: string; responds: () => number; close: () => void }> {
  let responds = 0;
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString("utf8");
    const headers: Record<string, string> = {};
    for (const h of ["content-type", "accept", "authorization", "chio-proof"]) {
      const v = req.headers[h];
      if (typeof v === "string") headers[h] = v;
    }
    const init: RequestInit = { method: req.method!, headers };
    if (body) init.body = body;
    const up = await fetch(target + req.url, init);
    let text = await up.text();
    let status = up.status;
    if (req.method === "POST" && req.url!.endsWith("/respond")) {
      responds++;
      if (status === 200) {
        const aid = req.url!.split("/")[2];
        const message =
          `your vote on ${aid} is recorded and approved it, but the approved call is not finished yet ` +
          "(chio finishes it once its store recovers; do not vote again): store unavailable: the store went down";
        status = 500;
        text = JSON.stringify({ error: "vote_recorded", message }) + "\n";
      }
    }
    res.writeHead(status, { "Content-Type": "application/json" }).end(text);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, responds: () => responds, close: () => server.close() };
}

async function pending(): Promise<{ agent: Agent; c: ChioClient; id: string; token: string }> {
  const agent = await (await chiod()).newAgent("refunds");
  const c = clientFor(agent);
  const r: CallResult = await c.callTool({
    server: "payment-server",
    tool: "issue_refund",
    arguments: { customer_id: "cust-9012", amount: 450, currency: "USD" },
    governedIntent: { purpose: "Refund order #8834", maxAmount: { units: 450, currency: "USD" } },
  });
  assert.equal(r.status, "pending_approval");
  const id = (r as { approvalRequestId: string }).approvalRequestId;
  const token = signApproval(await c.approval(id), PrivateKey.load(FINANCE_LEAD_KEY));
  return { agent, c, id, token };
}

test("respond: a 500 vote_recorded is a VoteRecordedError, not outcome_unknown", async () => {
  const { c, id, token } = await pending();
  const p = await voteRecordedProxy((await chiod()).url);
  try {
    await assert.rejects(new ChioClient({ url: p.url }).respond(id, token), (e: unknown) => {
      assert.ok(e instanceof ChioError, String(e));
      assert.equal(e.code, "vote_recorded", `the vote is recorded, yet respond threw code ${e.code}: ${e.message}`);
      assert.ok(e instanceof VoteRecordedError);
      assert.equal(e.status, 500);
      assert.equal(e.serverCode, "vote_recorded");
      assert.match(e.message, /is recorded/);
      return true;
    });
    // The vote is chiod's: the same token again is refused as before.
    await assert.rejects(c.respond(id, token), (e: unknown) => e instanceof ChioError && e.code === "conflict");
  } finally {
    p.close();
  }
});

test("resumeWithApproval: a recorded vote is not presented again", async () => {
  const { agent, token } = await pending();
  const p = await voteRecordedProxy((await chiod()).url);
  try {
    const done = await clientFor(agent, p.url).resumeWithApproval({ approvalToken: token, timeoutMs: 30_000 });
    assert.equal(done.status, "allowed");
    assert.equal(p.responds(), 1, "the recorded vote's token was presented again");
  } finally {
    p.close();
  }
});
