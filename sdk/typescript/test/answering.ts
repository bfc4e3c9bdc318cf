// A loopback server that answers every request with one JSON body, and an
// agent client of it: for tests of how the SDK reads answers chiod would
// never send (mistyped members), no chiod needed.

import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, test } from "node:test";

import { ChioClient, ChioError, PrivateKey } from "@chio-protocol/sdk";

/**
 * For each [name, answer], tests that callTool of req-typed answered with
 * it is outcome_unknown (never a result), and that awaitApproval and, with
 * status true, status("req-typed") reject it with a ChioError.
 */
export async function unreadableAnswerTests(answers: [string, Record<string, unknown>][], status: boolean): Promise<void> {
  let answer: Record<string, unknown> = {};
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify(answer));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  after(() => server.close());
  const key = PrivateKey.fromSeed(new Uint8Array(32));
  const client = new ChioClient({
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    key,
    capability: JSON.stringify({ id: "cap-1", subject: key.publicKey }),
  });
  for (const [name, a] of answers) {
    test(`callTool: an answer with ${name} is outcome unknown, not a result`, async () => {
      answer = a;
      let err: unknown;
      try {
        const r = await client.callTool({ server: "pay", tool: "issue_refund", arguments: { amount: 450 }, requestId: "req-typed" });
        assert.fail(`read as ${JSON.stringify(r)}`);
      } catch (e) {
        err = e;
      }
      assert.ok(err instanceof ChioError, String(err));
      assert.equal(err.code, "outcome_unknown", err.message);
    });
    test(`awaitApproval: an answer with ${name} is an error`, async () => {
      answer = a;
      await assert.rejects(client.awaitApproval("req-typed"), (e: unknown) => e instanceof ChioError);
    });
    if (status) {
      test(`status: an answer with ${name} is an error`, async () => {
        answer = a;
        await assert.rejects(client.status("req-typed"), (e: unknown) => e instanceof ChioError);
      });
    }
  }
}
