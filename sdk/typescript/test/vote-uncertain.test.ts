// chiod's answer to a vote whose own commit may or may not have landed (an
// fsync error, a COMMIT whose answer was lost; kernel.ErrVoteUncertain):
// testdata/sdk/vote_uncertain.json, which the Go SDK's tests check is the
// real API's answer. It was a 503 "unavailable", which respond reported as
// code "unavailable": "nothing was allowed". The vote may have approved,
// and run, the call.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, test } from "node:test";

import { ChioClient, ChioError, PrivateKey, VoteUncertainError, isRetryable, signApproval, type CallResult } from "@chio-protocol/sdk";

import { FINANCE_LEAD_KEY, chiod, stopChiod, type Agent } from "./harness.js";
import { ROOT } from "./paths.js";

after(stopChiod);

const fixture = JSON.parse(readFileSync(join(ROOT, "testdata", "sdk", "vote_uncertain.json"), "utf8")) as {
  status: number;
  error: string;
  message: string;
};

const clientFor = (a: Agent, url?: string): ChioClient =>
  new ChioClient({ url: url ?? a.env["CHIO_URL"]!, keyFile: a.keyFile, capabilityFile: a.capabilityFile });

/**
 * A proxy in front of the real chiod. The first POST
 * /approvals/{id}/respond is forwarded (chiod records the vote for real)
 * and then answered with the fixture's envelope; later ones pass through.
 * responds counts the respond POSTs.
 */
async function voteUncertainProxy(target: string): Promise<{ url: string; responds: () => number; close: () => void }> {
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
    if (req.method === "POST" && req.url!.endsWith("/respond") && ++responds === 1 && status === 200) {
      const message = fixture.message.replaceAll("{approval_id}", req.url!.split("/")[2]!);
      status = fixture.status;
      text = JSON.stringify({ error: fixture.error, message }) + "\n";
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

test("respond: a vote that may or may not be recorded is not 'unavailable'", async () => {
  const { c, id, token } = await pending();
  const p = await voteUncertainProxy((await chiod()).url);
  try {
    await assert.rejects(new ChioClient({ url: p.url }).respond(id, token), (e: unknown) => {
      assert.ok(e instanceof ChioError, String(e));
      assert.equal(e.code, "vote_uncertain", `the vote may be recorded, yet respond threw code ${e.code}: ${e.message}`);
      assert.ok(e instanceof VoteUncertainError);
      assert.ok(isRetryable(e), "the same token again settles it");
      assert.equal(e.status, 503);
      assert.equal(e.serverCode, "vote_uncertain");
      assert.match(e.message, /may or may not be recorded/);
      return true;
    });
    // It was recorded: the same token again is refused as a replay.
    await assert.rejects(c.respond(id, token), (e: unknown) => e instanceof ChioError && e.code === "conflict");
  } finally {
    p.close();
  }
});

test("resumeWithApproval: an uncertain vote's same token is presented again", async () => {
  const { agent, token } = await pending();
  const p = await voteUncertainProxy((await chiod()).url);
  try {
    const done = await clientFor(agent, p.url).resumeWithApproval({ approvalToken: token, timeoutMs: 30_000 });
    assert.equal(done.status, "allowed");
    assert.equal(p.responds(), 2, "the uncertain vote's token was not presented again");
  } finally {
    p.close();
  }
});
