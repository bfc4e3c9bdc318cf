// chiod takes a request id of 1..128 characters of [A-Za-z0-9._:-], not
// "." or "..", and not starting with "ar-" (approval.IDRule). callTool
// checked only the last: an id with a character that cannot go in the
// Idempotency-Key header (a newline) made fetch throw before anything was
// sent, and that came back as "outcome_unknown", "it may have run", for a
// call that never left the process. Bad input is "bad_request", at once,
// with nothing sent. Python's test_request_id.py is the same test.

import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";

import { ChioClient, ChioError, PrivateKey } from "@chio-protocol/sdk";

test("a request id chiod would refuse is bad_request, and nothing is sent", async () => {
  let arrived = 0;
  const server = createServer((req, res) => {
    req.resume();
    arrived++;
    res.writeHead(500).end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  try {
    const key = PrivateKey.fromSeed(new Uint8Array(32));
    const client = new ChioClient({
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      key,
      capability: JSON.stringify({ id: "cap-x", subject: key.publicKey }),
    });
    for (const requestId of ["req-a\nb", "req-a\r\nX-Injected: 1", "req a", "req-é", "..", "r".repeat(129)]) {
      let err: unknown;
      try {
        await client.callTool({ server: "demo", tool: "echo", arguments: {}, requestId });
      } catch (e) {
        err = e;
      }
      assert.ok(err instanceof ChioError, `${JSON.stringify(requestId)}: no ChioError: ${String(err)}`);
      assert.equal(err.code, "bad_request", `${JSON.stringify(requestId)}: ${err.message}`);
    }
    assert.equal(arrived, 0, "a call with a bad request id was sent");
  } finally {
    server.close();
  }
});
