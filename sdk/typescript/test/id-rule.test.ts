// awaitApproval, status, approval, respond, cancel and resumeWithApproval
// take an id from the caller (often read back from a file or another
// process's output). An id outside chiod's rule (approval.ValidID: 1..128
// characters of [A-Za-z0-9._:-], not "." or "..") is bad_request, said
// before anything is sent, as callTool does for a request id and as the Go
// SDK does (sdk/await_id_rule_test.go): it was sent, and "req/1" or ".."
// (which the URL resolves to another path) read whatever answered there.

import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, test } from "node:test";

import { ChioClient, ChioError, PrivateKey } from "@chio-protocol/sdk";

const paths: string[] = [];
const server = createServer((req, res) => {
  paths.push(`${req.method} ${req.url}`);
  req.resume();
  req.on("end", () => {
    const url = req.url ?? "";
    let body: unknown = { status: "allowed", request_id: "req-1", receipt_id: "rcpt-1", output: {} };
    if (url.startsWith("/approvals/") && req.method === "GET") body = { request: { approval_id: "ar-1", request_id: "req-1" } };
    else if (url.endsWith("/respond")) body = { approval_id: "ar-1", outcome: "approved", approvals: 1, quorum: 1 };
    else if (url.endsWith("/cancel")) body = { status: "cancelled", request_id: "req-1", reason: "r" };
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify(body));
  });
});
await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
after(() => server.close());

const key = PrivateKey.fromSeed(new Uint8Array(32));
const client = new ChioClient({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, key, bearer: "reader-token" });

async function refused(what: string, p: Promise<unknown>): Promise<void> {
  let err: unknown;
  try {
    const r = await p;
    assert.fail(`${what}: resolved to ${JSON.stringify(r)}`);
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof ChioError, `${what}: ${String(err)}`);
  assert.equal(err.code, "bad_request", `${what}: ${err.message}`);
}

const ANY_IDS: Record<string, string> = {
  newline: "req-1\nreq-2",
  slash: "req/1",
  "dot-dot": "..",
  dot: ".",
  "too long": "req-" + "x".repeat(200),
  "approval space": "ar-1 2",
};

test("awaitApproval and status refuse an id outside chiod's rule, sending nothing", async () => {
  paths.length = 0;
  for (const [name, id] of Object.entries(ANY_IDS)) {
    await refused(`awaitApproval ${name}`, client.awaitApproval(id, { timeoutMs: 2000 }));
    await refused(`status ${name}`, client.status(id));
  }
  assert.deepEqual(paths, [], "requests sent");
});

const APPROVAL_IDS: Record<string, string> = {
  space: "ar-1 2",
  slash: "ar-1/respond",
  "too long": "ar-" + "x".repeat(200),
};

test("approval, respond, cancel and resumeWithApproval refuse an approval id outside chiod's rule, sending nothing", async () => {
  paths.length = 0;
  for (const [name, id] of Object.entries(APPROVAL_IDS)) {
    const token = { request_id: id };
    await refused(`approval ${name}`, client.approval(id));
    await refused(`respond ${name}`, client.respond(id, token));
    await refused(`cancel ${name}`, client.cancel(id, "not needed"));
    await refused(`resumeWithApproval ${name}`, client.resumeWithApproval({ approvalToken: token, timeoutMs: 2000 }));
  }
  assert.deepEqual(paths, [], "requests sent");
});
