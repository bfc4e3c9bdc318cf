// chiod's answer to a call, and to a read of one, names the call
// (request_id: kernel.Outcome always carries it). An answer naming another
// call, or none (a proxy or cache that served another request's answer, a
// misrouted load balancer), says nothing about this one: it must never be
// returned as this call's outcome. For status and awaitApproval it is an
// error; a cancel's answer must be the cancelled call of that approval, an
// approval read that approval (as the Go and Python SDKs). callTool's cases
// are in testdata/sdk/call_outcomes.json.

import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, test } from "node:test";

import { ChioClient, ChioError, PrivateKey } from "@chio-protocol/sdk";

const OTHER_ANSWERS: Record<string, Record<string, unknown>> = {
  "another call's allow": { status: "allowed", request_id: "req-other", receipt_id: "rc-1", output: { refund: "re_99" } },
  "another call's denial": { status: "denied", request_id: "req-other", reason: "r", guard: "g" },
  "another call's pending": { status: "pending_approval", request_id: "req-other", approval_request_id: "ar-1" },
  "an allow naming no call": { status: "allowed", receipt_id: "rc-1", output: { refund: "re_99" } },
};

let answer: (path: string) => unknown = () => ({});
const server: Server = createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify(answer(req.url ?? "")));
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

/** The error fn throws; fails the test if it returns, or throws other than a ChioError or a timed_out. */
async function refused(fn: () => Promise<unknown>, what: string): Promise<void> {
  let r: unknown;
  try {
    r = await fn();
  } catch (e) {
    assert.ok(e instanceof ChioError, `${what}: ${e}`);
    assert.notEqual(e.code, "timed_out", `${what}: timed out instead of refusing the answer: ${e.message}`);
    return;
  }
  assert.fail(`${what}: returned ${JSON.stringify(r)}, want an error`);
}

for (const [name, state] of Object.entries(OTHER_ANSWERS)) {
  test(`status and awaitApproval refuse ${name}`, async () => {
    answer = () => state;
    await refused(() => client.status("req-t"), `status(req-t) answered with ${JSON.stringify(state)}`);
    await refused(() => client.awaitApproval("req-t", { timeoutMs: 2000 }), `awaitApproval(req-t) answered with ${JSON.stringify(state)}`);
  });
}

test("cancel answered with another approval's cancelled call is an error", async () => {
  answer = () => ({ status: "cancelled", request_id: "req-other", approval_request_id: "ar-other", reason: "stop" });
  await refused(() => client.cancel("ar-t", "stop"), "cancel(ar-t)");
});

test("approval and awaitApproval of an approval answered with another request are errors", async () => {
  answer = (path) =>
    path.startsWith("/approvals/")
      ? { request: { approval_id: "ar-other", request_id: "req-other" } }
      : { status: "allowed", request_id: "req-other", receipt_id: "rc-1", output: { refund: "re_99" } };
  await refused(() => client.approval("ar-t"), "approval(ar-t)");
  await refused(() => client.awaitApproval("ar-t", { timeoutMs: 2000 }), "awaitApproval(ar-t)");
});
