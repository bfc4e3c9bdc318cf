// status() of a call that was allowed outright and whose tool is still
// running (chiod: "dispatching", no approval id) is a PendingApproval with
// `running: true`, and the documented way on — awaitApproval(requestId) —
// finishes it (awaitApproval("") would be a bad request).

import assert from "node:assert/strict";
import { test } from "node:test";

import { ChioClient, ChioError, isPendingApproval } from "@chio-protocol/sdk";

/** A client whose chiod answers GETs with the given states in turn (the last one repeated). */
function clientAnswering(...states: string[]): { client: ChioClient; urls: string[] } {
  const urls: string[] = [];
  const fetchFake = async (url: string | URL | Request): Promise<Response> => {
    urls.push(String(url));
    const body = states[Math.min(urls.length - 1, states.length - 1)]!;
    return new Response(body, { status: 200, headers: { "Content-Type": "application/json" } });
  };
  return { client: new ChioClient({ url: "http://127.0.0.1:1", bearer: "reader-token", fetch: fetchFake as typeof fetch }), urls };
}

test("status: a running call with no human is pending, running, and awaited by its request id", async () => {
  const { client, urls } = clientAnswering(
    '{"status":"dispatching","request_id":"run-5:deploy","receipt_id":"rc-1"}',
    '{"status":"allowed","request_id":"run-5:deploy","receipt_id":"rc-1","output":{"ok":true},"execution":"succeeded"}',
  );
  const r = await client.status("run-5:deploy");
  assert.ok(isPendingApproval(r));
  assert.equal(r.running, true);
  assert.equal(r.approvalRequestId, "");
  await assert.rejects(client.awaitApproval(r.approvalRequestId), (e) => e instanceof ChioError && e.code === "bad_request");
  const done = await client.awaitApproval(r.requestId);
  assert.equal(done.status, "allowed");
  assert.deepEqual((done as { output: unknown }).output, { ok: true });
  assert.ok(urls.every((u) => u.includes("/v1/calls/run-5%3Adeploy")), urls.join("\n"));
});

test("status: a human wait is not running; an approved call whose tool runs is, and keeps its approval id", async () => {
  for (const [state, running] of [
    ['{"status":"pending_approval","request_id":"r-1","approval_request_id":"ar-1","deadline":1900000000}', false],
    ['{"status":"dispatching","request_id":"r-1","approval_request_id":"ar-1"}', true],
  ] as const) {
    const r = await clientAnswering(state).client.status("r-1");
    assert.ok(isPendingApproval(r), state);
    assert.equal(r.running, running, state);
    assert.equal(r.approvalRequestId, "ar-1", state);
  }
});
