// An approver may amend a call to {} (every argument removed), or approve it
// as sent: approval.amended says which, as the Go SDK's Amended and
// Python's approval.amended do.

import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";

import { ChioClient, isAllowed } from "@chio-protocol/sdk";

const cases: [string, boolean][] = [
  ['{"status":"approved","approver":"ed25519:aa","amended":true,"amended_arguments":{}}', true],
  ['{"status":"approved","approver":"ed25519:aa","amended_arguments":{"amount":3}}', true],
  ['{"status":"approved","approver":"ed25519:aa","amended":false}', false],
];

for (const [approval, want] of cases) {
  test(`approval.amended is ${want} for ${approval}`, async () => {
    const body = `{"status":"allowed","request_id":"req-1","receipt_id":"rc-2","output":{},"approval_request_id":"ar-1","approval":${approval}}`;
    const server = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { "Content-Type": "application/json" }).end(body);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const { port } = server.address() as AddressInfo;
      const c = new ChioClient({ url: `http://127.0.0.1:${port}`, bearer: "reader-token" });
      const r = await c.awaitApproval("req-1", { timeoutMs: 5000 });
      assert.ok(isAllowed(r));
      assert.equal(r.approval?.amended, want);
    } finally {
      server.close();
    }
  });
}
