// docs/agent-developer.md's TypeScript example is examples/refund-agent.ts,
// verbatim, and it runs: park an approval in a workflow store, exit, and
// finish the call later from other processes; withdraw a parked call;
// report a refund the tool refused.

import assert from "node:assert/strict";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";

import { chiod, run, stopChiod } from "./harness.js";
import { ROOT } from "./paths.js";

after(stopChiod);

const PKG = join(ROOT, "sdk", "typescript");

function docBlock(marker: string): string {
  const docs = readFileSync(join(ROOT, "docs", "agent-developer.md"), "utf8");
  const esc = marker.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  const m = new RegExp(`<!-- ${esc} -->\\s*\`\`\`\\w*\\n([\\s\\S]*?)\`\`\``).exec(docs);
  assert.ok(m, `no code block after <!-- ${marker} --> in docs/agent-developer.md`);
  return m[1]!;
}

test("the docs show the tested file", () => {
  assert.equal(docBlock("sdk/typescript/examples/refund-agent.ts"), readFileSync(join(PKG, "examples", "refund-agent.ts"), "utf8"));
});

test("park, then resume from other processes", async () => {
  const d = await chiod();
  const agent = await d.newAgent("demo-refunds");
  const work = mkdtempSync(join(tmpdir(), "chio-ts-docs-"));
  const step = async (...args: string[]): Promise<string> => {
    // Compiled by tsconfig.test.json; run where the workflow store lives.
    const r = await run(process.execPath, [join(PKG, "build", "examples", "refund-agent.js"), ...args], { ...process.env, ...agent.env }, work);
    assert.equal(r.code, 0, r.stderr);
    return r.stdout.trim();
  };
  const out = await step("request", "8834", "450");
  const m = /^order 8834: parked (ar-\S+) until \S+: .*450.*$/.exec(out);
  assert.ok(m, out);
  assert.equal(await step("resume", "0.5"), "order 8834: still waiting for a human");
  await d.approve(m[1]!);
  assert.match(await step("resume", "30"), /^order 8834: refund rf-[0-9a-f]{16} issued \(approved by Finance Lead\)$/);
  assert.equal(await step("resume", "30"), ""); // nothing left parked
  // Replaying the step gets the stored outcome; the refund is not made twice.
  assert.match(await step("request", "8834", "450"), /^order 8834: refund rf-[0-9a-f]{16} issued/);
  const ledger = readFileSync(join(d.dataDir, "builtin", "ledger.jsonl"), "utf8").split("\n").filter(Boolean);
  assert.equal(ledger.filter((l) => (JSON.parse(l).request_id as string).startsWith("refund-order-8834-")).length, 1);
  // Below the threshold no human is asked.
  assert.match(await step("request", "17", "50"), /^order 17: refund rf-[0-9a-f]{16} issued$/);

  // Withdrawn before a human decided: cancelled, nothing left parked, no refund.
  assert.match(await step("request", "9001", "450"), /^order 9001: parked ar-/);
  assert.equal(await step("cancel", "9001", "customer withdrew the request"), "order 9001: cancelled: customer withdrew the request");
  assert.equal(await step("resume", "30"), "");
  const refunds = () => readFileSync(join(d.dataDir, "builtin", "ledger.jsonl"), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l).request_id);
  assert.ok(!refunds().some((id: string) => id.startsWith("refund-order-9001-")));
  // Too late to withdraw: the human's decision stands.
  const parked = /^order 9002: parked (ar-\S+) until /.exec(await step("request", "9002", "450"));
  assert.ok(parked);
  await d.approve(parked[1]!);
  assert.match(await step("cancel", "9002", "changed my mind"), /^order 9002: refund rf-[0-9a-f]{16} issued \(approved by Finance Lead\)$/);
  // The tool refuses a zero refund: a failure, not an output.
  assert.equal(await step("request", "18", "0"), "order 18: the refund failed (tool_error): invalid arguments: amount must be > 0");
});
