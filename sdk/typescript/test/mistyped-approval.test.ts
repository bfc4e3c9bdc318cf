// A decided call's approval says whether the human amended it: the tool
// ran (or was denied) with amendedArguments, not the call's arguments. An
// answer whose approval, or its amended flag, or its approver, is not of
// the type chiod sends cannot be checked: it must not read as "not
// amended" or as no approval at all. The Go SDK cannot decode it (outcome
// unknown for a call, an error for a wait); so here.

import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, test } from "node:test";

import { ChioClient, ChioError, PrivateKey } from "@chio-protocol/sdk";

const APPROVER = "ed25519:" + "ab".repeat(32);
const base = { status: "allowed", request_id: "req-typed", receipt_id: "rcpt-1", output: { refunded: true }, execution: "succeeded" };
const ANSWERS: [string, Record<string, unknown>][] = [
  ["amended \"true\"", { ...base, approval: { approver: APPROVER, amended: "true" } }],
  ["amended 1", { ...base, approval: { approver: APPROVER, amended: 1 } }],
  ["approver 7", { ...base, approval: { approver: 7, amended: true } }],
  ["approval a string", { ...base, approval: "amended by finance-lead" }],
];

let answer: Record<string, unknown> = {};
const server: Server = createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify(answer));
  });
});
await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
after(() => server.close());

const key = PrivateKey.fromSeed(new Uint8Array(32));
const client = new ChioClient({
  url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
  key,
  capability: JSON.stringify({ id: "cap-1", subject: key.publicKey }),
});

for (const [name, a] of ANSWERS) {
  test(`callTool: an answer with ${name} is outcome unknown, not a plain allow`, async () => {
    answer = a;
    let err: unknown;
    try {
      const r = await client.callTool({ server: "pay", tool: "issue_refund", arguments: { amount: 450 }, requestId: "req-typed" });
      assert.fail(`read as ${JSON.stringify(r)}`);
    } catch (e) {
      err = e;
    }
    assert.ok(err instanceof ChioError, String(err));
    assert.equal(err.code, "outcome_unknown", err.message);
  });

  test(`awaitApproval: an answer with ${name} is an error`, async () => {
    answer = a;
    await assert.rejects(client.awaitApproval("req-typed"), (e: unknown) => e instanceof ChioError);
  });
}
