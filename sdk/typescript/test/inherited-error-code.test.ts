// An error envelope whose code is a name every JavaScript object inherits
// ("constructor", "toString", "__proto__") is not a code chiod sends: it
// must be classified by status as any unknown code is (a 5xx: the call
// may have run), as in the Go SDK, never looked up on Object.prototype.

import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";

import { ChioClient, ChioError, PrivateKey } from "@chio-protocol/sdk";

function client(port: number): ChioClient {
  const key = PrivateKey.fromSeed(new Uint8Array(32));
  return new ChioClient({ url: `http://127.0.0.1:${port}`, key, capability: JSON.stringify({ id: "cap-1", subject: key.publicKey }) });
}

for (const code of ["constructor", "toString", "__proto__"]) {
  test(`a 500 with error ${JSON.stringify(code)}, then chiod gone: outcome unknown, never "not sent"`, async () => {
    let requests = 0;
    const server = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        requests++;
        // The first attempt reached a server and may have run; after it,
        // nothing listens: the later attempts cannot connect.
        res.writeHead(500, { "Content-Type": "application/json", Connection: "close" });
        res.end(JSON.stringify({ error: code, message: "internal error" }));
        server.close();
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as AddressInfo).port;
    let err: unknown;
    try {
      await client(port).callTool({ server: "pay", tool: "issue_refund", arguments: { amount: 450 }, requestId: "req-inherited" });
    } catch (e) {
      err = e;
    }
    assert.equal(requests, 1);
    assert.ok(err instanceof ChioError, `not a ChioError: ${err}`);
    assert.notEqual(err.name, "NotSentError", `reported as not sent after an answered attempt: ${err.message}`);
    assert.equal(err.code, "outcome_unknown", err.message);
    assert.equal(err.requestId, "req-inherited");
  });
}
