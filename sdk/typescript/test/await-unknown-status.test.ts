// An answer to GET /v1/calls/{id} with a status chiod never sends (a newer
// chiod, a proxy's rewritten or empty JSON) is neither final nor pending.
// awaitApproval must fail at once with a clear error, as status() does
// (fromState), not poll again in a tight loop until the timeout (forever
// without one). The Go SDK's TestAwaitUnknownStatusFailsAtOnce is the same.

import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";

import { ChioClient, ChioError, PrivateKey } from "@chio-protocol/sdk";

for (const body of ['{"status":"paused","request_id":"req-x"}', "{}"]) {
  test(`awaitApproval: unknown status ${body} fails at once`, async () => {
    let gets = 0;
    const server = createServer((req, res) => {
      gets++;
      req.resume();
      res.writeHead(200, { "Content-Type": "application/json" }).end(body);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const { port } = server.address() as AddressInfo;
      const c = new ChioClient({ url: `http://127.0.0.1:${port}`, bearer: "reader-token" });
      const start = Date.now();
      let err: unknown;
      try {
        await c.awaitApproval("req-x", { timeoutMs: 2000 });
      } catch (e) {
        err = e;
      }
      const took = Date.now() - start;
      assert.ok(err instanceof ChioError, `no ChioError: ${String(err)}`);
      assert.notEqual(err.code, "timed_out", `polled ${gets} times for ${took} ms: ${err.message}`);
      assert.ok(gets <= 1, `polled ${gets} times`);
      assert.match(err.message, /status/);
    } finally {
      server.close();
    }
  });
}

// callTool met a call chiod allowed and is still running (202 dispatching)
// and its wait for the outcome failed: the call may have run. It must throw
// outcome_unknown naming the requestId, as the Go SDK's CallTool
// (TestDispatchingCallOutlivingTheContextIsOutcomeUnknown) and Python's.
test("callTool: a failed wait for a running call is outcome_unknown", async () => {
  const server = createServer((req, res) => {
    req.resume();
    if (req.method === "POST") res.writeHead(202).end('{"status":"dispatching","request_id":"req-x"}');
    else res.writeHead(200).end('{"status":"paused","request_id":"req-x"}');
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  try {
    const { port } = server.address() as AddressInfo;
    const key = PrivateKey.fromSeed(new Uint8Array(32));
    const capability = JSON.stringify({ id: "cap-x", subject: key.publicKey });
    const c = new ChioClient({ url: `http://127.0.0.1:${port}`, key, capability });
    let err: unknown;
    try {
      await c.callTool({ server: "demo", tool: "echo", arguments: {}, requestId: "req-x" });
    } catch (e) {
      err = e;
    }
    assert.ok(err instanceof ChioError, `no ChioError: ${String(err)}`);
    assert.equal(err.code, "outcome_unknown", err.message);
    assert.equal(err.requestId, "req-x");
  } finally {
    server.close();
  }
});
