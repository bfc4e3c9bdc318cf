// An allowed call's answer whose tool_error or execution is not a string
// (a newer chiod's structured error, a proxy's rewrite) cannot be checked:
// it must never read as a success whose output is used. The Go SDK cannot
// decode it (an unreadable answer: outcome unknown for a call, an error
// for a wait); so here.

import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, test } from "node:test";

import { ChioClient, ChioError, PrivateKey } from "@chio-protocol/sdk";

const ANSWERS: Record<string, unknown>[] = [
  { status: "allowed", request_id: "req-typed", receipt_id: "rcpt-1", output: { refunded: true }, tool_error: { message: "refund failed" } },
  { status: "allowed", request_id: "req-typed", receipt_id: "rcpt-1", output: { refunded: true }, execution: { state: "unknown" } },
  { status: "allowed", request_id: "req-typed", receipt_id: "rcpt-1", output: { refunded: true }, execution: 3 },
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

for (const a of ANSWERS) {
  const which = JSON.stringify(a["tool_error"] ?? a["execution"]);
  test(`callTool: an allowed answer with ${which} is outcome unknown, not a success`, async () => {
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

  test(`awaitApproval: an allowed answer with ${which} is an error, not a success`, async () => {
    answer = a;
    await assert.rejects(client.awaitApproval("req-typed"), (e: unknown) => e instanceof ChioError);
  });

  test(`status: an allowed answer with ${which} is an error, not a success`, async () => {
    answer = a;
    await assert.rejects(client.status("req-typed"), (e: unknown) => e instanceof ChioError);
  });
}
