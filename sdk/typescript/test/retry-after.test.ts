// chiod turns a request away with 429 and Retry-After (a long-poll over the
// credential's share; a gateway's rate limit): the SDK asks again no sooner
// than it says, instead of its own 250 ms backoff, and when the deadline is
// nearer than that, throws the refusal at once. The Go SDK's
// retry_after_test.go and Python's test_retry_after.py are the same test.

import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";

import { ChioClient, ChioError, PrivateKey, parseRetryAfter } from "@chio-protocol/sdk";

const REFUSED = '{"error":"unavailable","message":"this credential already holds 8 concurrent waits, the most it may; retry later"}';
const ALLOWED = '{"status":"allowed","request_id":"req-x","receipt_id":"rc-1","output":{"ok":true}}';

/** Answers each request with the next [status, Retry-After, body] (the last repeats); records arrival times. */
async function scripted(script: Array<[number, string | undefined, string]>) {
  const arrived: number[] = [];
  const server = createServer((req, res) => {
    req.resume();
    arrived.push(performance.now());
    const [status, retryAfter, body] = script[Math.min(arrived.length, script.length) - 1]!;
    const headers: Record<string, string> = { "Content-Type": "application/json" };
    if (retryAfter !== undefined) headers["Retry-After"] = retryAfter;
    res.writeHead(status, headers).end(body);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  const key = PrivateKey.fromSeed(new Uint8Array(32));
  const client = new ChioClient({ url: `http://127.0.0.1:${port}`, key, capability: JSON.stringify({ id: "cap-x", subject: key.publicKey }) });
  return { arrived, client, close: () => server.close() };
}

for (const what of ["awaitApproval", "callTool"] as const) {
  test(`${what}: asks again no sooner than Retry-After`, async () => {
    const s = await scripted([[429, "1", REFUSED], [200, undefined, ALLOWED]]);
    try {
      const res = what === "awaitApproval"
        ? await s.client.awaitApproval("req-x", { timeoutMs: 10_000 })
        : await s.client.callTool({ server: "demo", tool: "echo", arguments: {}, requestId: "req-x" });
      assert.equal(res.status, "allowed");
      assert.equal(s.arrived.length, 2);
      const gap = s.arrived[1]! - s.arrived[0]!;
      assert.ok(gap >= 1000, `asked again ${Math.round(gap)} ms after a 429 with Retry-After: 1`);
    } finally {
      s.close();
    }
  });

  test(`${what}: a Retry-After beyond the deadline ends at once`, async () => {
    const s = await scripted([[429, "30", REFUSED]]);
    try {
      const start = Date.now();
      let err: unknown;
      try {
        if (what === "awaitApproval") await s.client.awaitApproval("req-x", { timeoutMs: 5000 });
        else await s.client.callTool({ server: "demo", tool: "echo", arguments: {}, requestId: "req-x" }, { timeoutMs: 5000 });
      } catch (e) {
        err = e;
      }
      const took = Date.now() - start;
      assert.ok(err instanceof ChioError, `no ChioError: ${String(err)}`);
      assert.ok(took < 2000, `waited ${took} ms`);
      assert.equal(s.arrived.length, 1);
      assert.equal(err.code, "unavailable", err.message);
      assert.equal(err.retryAfterMs, 30_000);
    } finally {
      s.close();
    }
  });
}

// RFC 9110 allows Retry-After as an HTTP-date, which a proxy or load
// balancer in front of chiod may send: it asks for the same wait as the
// seconds until that date, never none.
test("a Retry-After given as an HTTP-date is honoured", async () => {
  const s = await scripted([[429, new Date(Date.now() + 30_000).toUTCString(), REFUSED]]);
  try {
    let err: unknown;
    try {
      await s.client.callTool({ server: "demo", tool: "echo", arguments: {}, requestId: "req-x" }, { timeoutMs: 5000 });
    } catch (e) {
      err = e;
    }
    assert.ok(err instanceof ChioError, `no ChioError: ${String(err)}`);
    assert.equal(s.arrived.length, 1, `asked ${s.arrived.length} times in spite of a Retry-After 30 s away`);
    assert.equal(err.code, "unavailable", err.message);
    assert.ok(err.retryAfterMs > 20_000 && err.retryAfterMs <= 30_000, `retryAfterMs ${err.retryAfterMs}`);
  } finally {
    s.close();
  }
});

test("parseRetryAfter", () => {
  const cases: Array<[string | null, number]> = [
    [null, 0], ["", 0], ["0", 0], ["1", 1000], [" 7 ", 7000], ["3600", 3_600_000], ["86400", 3_600_000],
    ["18446744074", 3_600_000], ["99999999999999999999999", 3_600_000], ["-1", 0], ["1.5", 0], ["soon", 0],
    ["Wed, 21 Oct 2015 07:28:00 GMT", 0], ["+5", 0], ["\u0661", 0],
    // HTTP-dates (IMF-fixdate, RFC 850, asctime): a date past is 0, one
    // more than an hour away is capped; a date in no HTTP-date form is 0.
    ["Sunday, 06-Nov-94 08:49:37 GMT", 0], ["Sun Nov  6 08:49:37 1994", 0],
    ["Fri, 31 Dec 9999 23:59:59 GMT", 3_600_000], ["Friday, 31-Dec-99 23:59:59 GMT", 0], ["Fri Dec 31 23:59:59 9999", 3_600_000],
    ["Fri, 31 Dec 9999 23:59:59 PST", 0], ["9999-12-31T23:59:59Z", 0], ["Fri, 31 Dec 9999", 0],
  ];
  for (const [value, want] of cases) assert.equal(parseRetryAfter(value), want, JSON.stringify(value));
});
