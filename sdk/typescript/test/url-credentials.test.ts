// A url with user:password ("http://u:pw@host:7420") cannot be fetched:
// Node's fetch refuses to construct such a request, before connecting.
// The client took the url, and every callTool then failed as a transport
// error, retried and reported as "outcome_unknown" ("it may have run") for
// a call that never left the process, with the password in the message.
// Such a url is bad input: "bad_request", with nothing sent and the
// password not quoted.

import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, test } from "node:test";

import { ChioClient, ChioError, PrivateKey } from "@chio-protocol/sdk";

let requests = 0;
const server = createServer((req, res) => {
  requests++;
  req.resume();
  res.writeHead(500).end();
});
await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
after(() => server.close());
const port = (server.address() as AddressInfo).port;

for (const userinfo of ["user:s3cret", "s3cret", ":s3cret"]) {
  test(`a url with credentials (${userinfo.replace("s3cret", "…")}@) is bad_request, nothing sent`, async () => {
    requests = 0;
    const key = PrivateKey.fromSeed(new Uint8Array(32));
    let err: unknown;
    try {
      const client = new ChioClient({ url: `http://${userinfo}@127.0.0.1:${port}`, key, capability: JSON.stringify({ id: "cap-1", subject: key.publicKey }) });
      await client.callTool({ server: "pay", tool: "issue_refund", arguments: { amount: 450 } });
    } catch (e) {
      err = e;
    }
    assert.ok(err instanceof ChioError, `no ChioError: ${String(err)}`);
    assert.equal(err.code, "bad_request", err.message);
    assert.doesNotMatch(err.message, /s3cret/, "the password is in the message");
    assert.equal(requests, 0);
  });
}
