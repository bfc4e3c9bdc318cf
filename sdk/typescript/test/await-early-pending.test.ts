// awaitApproval long-polls: each GET asks chiod to hold the answer until the
// call changes or the wait passes. An answer that comes back at once with
// the call still pending (a proxy or cache that drops or ignores ?wait=, a
// chiod answering while it shuts down) must be followed by a pause (the
// reconnect backoff), as a failed poll is, not by the next poll at once: a
// tight loop of signed requests for as long as the wait lasts. As the Go
// and Python SDKs.

import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, test } from "node:test";

import { ChioClient, ChioError, PrivateKey } from "@chio-protocol/sdk";

let gets = 0;
const PENDING = JSON.stringify({ status: "pending_approval", request_id: "req-p", approval_request_id: "ar-p", deadline: 4102444800 });
const server: Server = createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    gets++;
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(PENDING);
  });
});
await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
after(() => server.close());

test("awaitApproval does not poll in a tight loop when each poll is answered at once with the call pending", async () => {
  const key = PrivateKey.fromSeed(new Uint8Array(32));
  const client = new ChioClient({
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    key,
    capability: JSON.stringify({ id: "cap-1", subject: key.publicKey }),
  });
  await assert.rejects(client.awaitApproval("req-p", { timeoutMs: 3000 }), (e: unknown) => e instanceof ChioError && e.code === "timed_out");
  // With the backoff (0.25 s doubling) 3 s hold at most 5 polls; without
  // it, one poll per round trip.
  assert.ok(gets <= 10, `${gets} polls in 3 s, each answered at once with the call pending`);
});
