// callTool(call, { timeoutMs }) bounds every read of the call, including
// the approval read that fills in the deadline of a replayed pending
// answer (an idempotent retry's answer carries none). That read was bounded
// only by the caller's signal: a caller who passed timeoutMs and no signal
// could wait on it up to the SDK's 60-s per-request limit past timeoutMs
// (Go's ctx and Python's timeout bound it). Deterministic: the clock passes
// timeoutMs while the fake chiod answers the call, and any read started
// after that with a signal not yet aborted is one timeoutMs did not bound.

import assert from "node:assert/strict";
import { test } from "node:test";

import { ChioClient, PrivateKey, isPendingApproval } from "@chio-protocol/sdk";

test("callTool's timeoutMs bounds the read of a replayed pending call's deadline", async () => {
  const key = PrivateKey.fromSeed(new Uint8Array(32));
  const realNow = Date.now;
  let skew = 0;
  const unbounded: string[] = [];
  const fetchFake = async (url: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const u = String(url);
    if (u.endsWith("/v1/calls")) {
      skew = 1_000; // timeoutMs (500) passes while chiod answers
      const state = { status: "pending_approval", request_id: "req-late", approval_request_id: "ar-late", receipt_id: "rc-1" };
      return new Response(JSON.stringify(state), { status: 202, headers: { "Content-Type": "application/json" } });
    }
    if (!init?.signal?.aborted) unbounded.push(`${init?.method ?? "GET"} ${u}`);
    throw new TypeError("fetch failed"); // nothing else is answered
  };
  const client = new ChioClient({
    url: "http://127.0.0.1:1",
    key,
    capability: JSON.stringify({ id: "cap-1", subject: key.publicKey }),
    fetch: fetchFake as typeof fetch,
  });
  Date.now = () => realNow() + skew;
  let r;
  try {
    r = await client.callTool({ server: "pay", tool: "issue_refund", arguments: { amount: 450 }, requestId: "req-late" }, { timeoutMs: 500 });
  } finally {
    Date.now = realNow;
  }
  assert.deepEqual(unbounded, [], "reads started after timeoutMs passed, with nothing to end them but the per-request limit");
  // The call is parked: its result stands, without the deadline it could not read.
  assert.ok(isPendingApproval(r), JSON.stringify(r));
  assert.equal(r.approvalRequestId, "ar-late");
  assert.equal(r.deadline, undefined);
});
