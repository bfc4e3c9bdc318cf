// An answer to GET /v1/calls/{id} with a status chiod never sends (a newer
// chiod, a proxy's rewritten or empty JSON) is neither final nor pending.
// awaitApproval must fail at once with a clear error, as status() does
// (fromState), not poll again in a tight loop until the timeout (forever
// without one). The Go SDK's TestAwaitUnknownStatusFailsAtOnce is the same.

import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";

import { ChioClient, ChioError } from "@chio-protocol/sdk";

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
