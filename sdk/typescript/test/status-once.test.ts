// status(id) "reads a call's state once, without waiting", and takes no
// signal or timeout. Given an approval id it first reads the approval to
// learn the call's request id, and retried that read through every
// transport error and 5xx without end: with chiod down, status("ar-…")
// never settled, and nothing could stop it. Each read is made once; an
// error is the answer.

import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, test } from "node:test";

import { ChioClient, ChioError, PrivateKey } from "@chio-protocol/sdk";

const paths: string[] = [];
const server = createServer((req, res) => {
  paths.push(`${req.method} ${req.url}`);
  req.resume();
  // chiod's 503 to the first read; a 404 after it, so that a retry ends.
  const first = paths.length === 1;
  res.writeHead(first ? 503 : 404, { "Content-Type": "application/json" });
  res.end(JSON.stringify(first ? { error: "unavailable", message: "the store is down" } : { error: "not_found", message: "no such approval" }));
});
await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
after(() => server.close());

test("status of an approval id reads the approval once, and its error is the answer", async () => {
  const key = PrivateKey.fromSeed(new Uint8Array(32));
  const client = new ChioClient({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, key });
  let err: unknown;
  try {
    await client.status("ar-1");
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof ChioError, String(err));
  assert.deepEqual(paths, ["GET /approvals/ar-1"], `requests: ${err.message}`);
  assert.equal(err.code, "unavailable", err.message);
});
