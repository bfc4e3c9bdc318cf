// confirm's and ask's timeout passing while the question waits for a human
// (chiod parked it) is "timed_out" naming the call (requestId), so a caller
// who let the SDK choose the request id can still await the answer or
// cancel the question: without it the question stayed in front of the
// approvers with no way for the agent to find it again.

import assert from "node:assert/strict";
import { after, test } from "node:test";

import { ChioClient, ChioError } from "@chio-protocol/sdk";

import { chiod, stopChiod } from "./harness.js";

after(stopChiod);

test("confirm timing out while pending names the call", async () => {
  const d = await chiod();
  const agent = await d.newAgent("confirm");
  const c = new ChioClient({ url: agent.env["CHIO_URL"]!, keyFile: agent.keyFile, capabilityFile: agent.capabilityFile });
  let err: unknown;
  try {
    await c.confirm("Deploy to production?", { env: "prod" }, { timeoutMs: 1000 });
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof ChioError && err.code === "timed_out", `want timed_out, got ${String(err)}`);
  const rid = (err as ChioError).requestId;
  assert.ok(rid, `timed_out names no call: ${(err as Error).message}`);
  const now = await c.status(rid);
  assert.equal(now.status, "pending_approval");
  await c.cancel((now as { approvalRequestId: string }).approvalRequestId, "test over");
});
