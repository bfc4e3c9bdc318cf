// A chiod that is not running (or a wrong URL) refuses the connection: not
// a byte of the call was written, so it did not run. callTool threw that as
// "outcome_unknown" ("it may have run"), which makes a chiod that is simply
// down look like a payment that may have been made. It is a NotSentError
// (code "unavailable": nothing was allowed) naming the requestId, as the
// chio CLI's "the call was not sent". Once any attempt connected and lost
// its answer, the call may have run, whatever later attempts met.

import assert from "node:assert/strict";
import { createServer, type Socket } from "node:net";
import type { AddressInfo } from "node:net";
import { test } from "node:test";

import { ChioClient, ChioError, PrivateKey } from "@chio-protocol/sdk";

function clientAt(url: string): ChioClient {
  const key = PrivateKey.fromSeed(new Uint8Array(32));
  return new ChioClient({ url, key, capability: JSON.stringify({ id: "cap-1", subject: key.publicKey }) });
}

/** A port nothing listens on any more. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

async function callError(client: ChioClient, requestId: string): Promise<ChioError> {
  try {
    await client.callTool({ server: "pay", tool: "issue_refund", arguments: { amount: 450 }, requestId });
  } catch (e) {
    assert.ok(e instanceof ChioError, `not a ChioError: ${e}`);
    return e;
  }
  assert.fail("callTool did not throw");
}

test("a call refused on every attempt is not sent", async () => {
  const e = await callError(clientAt(`http://127.0.0.1:${await closedPort()}`), "req-down");
  assert.notEqual(e.code, "outcome_unknown", `a call never sent reads as outcome unknown: ${e.message}`);
  assert.equal(e.name, "NotSentError");
  assert.equal(e.code, "unavailable");
  assert.equal(e.requestId, "req-down");
  assert.match(e.message, /req-down/);
  assert.match(e.message, /not sent/);
});

// Node's fetch refuses a port the Fetch standard blocks (6000, 6665–6669,
// 10080, …) before it connects: a chiod listening there is never reached,
// and no call to it can have run.
test("a call to a port Node's fetch blocks is not sent, and says why", async () => {
  const e = await callError(clientAt("http://127.0.0.1:6000"), "req-bad-port");
  assert.equal(e.name, "NotSentError", `a call fetch never sent reads as ${e.code}: ${e.message}`);
  assert.equal(e.code, "unavailable");
  assert.equal(e.requestId, "req-bad-port");
  assert.match(e.message, /blocks port 6000/);
});

test("a lost answer followed by refused connections is outcome unknown", async () => {
  let reached = false;
  const server = createServer((sock: Socket) => {
    server.close(); // every later attempt is refused
    sock.once("data", () => {
      reached = true;
      sock.destroy(); // no answer: the call may have run
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  const e = await callError(clientAt(`http://127.0.0.1:${port}`), "req-lost");
  assert.ok(reached, "the first attempt did not reach the server");
  assert.equal(e.code, "outcome_unknown", e.message);
  assert.notEqual(e.name, "NotSentError");
  assert.equal(e.requestId, "req-lost");
});

test("a TLS handshake cut after connecting is outcome unknown", async () => {
  const server = createServer((sock: Socket) => sock.destroy());
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  try {
    const e = await callError(clientAt(`https://127.0.0.1:${(server.address() as AddressInfo).port}`), "req-tls");
    assert.equal(e.code, "outcome_unknown", e.message);
    assert.equal(e.requestId, "req-tls");
  } finally {
    server.close();
  }
});
