// verifyToolCall: a tool server runs only calls chio's kernel signed for it
// (testdata/vectors/tool_call.json, written by the Go implementation and
// checked there by toolserver.Verifier).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { ChioError, toolCallMessage, verifyToolCall } from "@chio-protocol/sdk";

import { ROOT, VECTORS } from "./paths.js";

interface Case { name: string; public_key: string; server: string; sent_at_ms: number; body: string; message: string; signature: string }
const CASES = (JSON.parse(readFileSync(join(VECTORS, "tool_call.json"), "utf8")) as { cases: Case[] }).cases;
const SENT_AT_SPELLINGS = (JSON.parse(readFileSync(join(ROOT, "testdata", "sdk", "tool_call_sent_at.json"), "utf8")) as { cases: { vector: string; sent_at: string }[] }).cases;

function headers(c: Case, over: Record<string, string> = {}): Record<string, string> {
  // chiod sends the body's request_id as the Idempotency-Key.
  const key = (JSON.parse(c.body) as { request_id: string }).request_id;
  return { "x-chio-server": c.server, "x-chio-sent-at": String(c.sent_at_ms), "x-chio-signature": c.signature, "idempotency-key": key, ...over };
}

for (const c of CASES) {
  test(`tool-call vector verifies: ${c.name}`, () => {
    const body = Buffer.from(c.body, "utf8");
    assert.equal(toolCallMessage(c.server, c.sent_at_ms, body).toString("utf8"), c.message);
    verifyToolCall(headers(c), body, c.public_key, c.server, { nowMs: c.sent_at_ms });
  });
}

test("verifyToolCall refuses what chio did not send to this server", () => {
  const c = CASES[0]!;
  const body = Buffer.from(c.body, "utf8");
  const now = c.sent_at_ms;
  const bad: [string, Record<string, string>, Buffer, string, number, string][] = [
    ["no headers", {}, body, c.server, now, c.public_key],
    ["changed body", headers(c), Buffer.from(c.body.replace("450", "450000"), "utf8"), c.server, now, c.public_key],
    ["another server", headers(c), body, "ledger", now, c.public_key],
    ["another server claimed", headers(c, { "x-chio-server": "ledger" }), body, "ledger", now, c.public_key],
    ["stale", headers(c), body, c.server, now + 301_000, c.public_key],
    // The signature covers the body, not the key a deduplicating server
    // keys on: a captured call re-sent under a fresh key would run again.
    ["replayed under another Idempotency-Key", headers(c, { "idempotency-key": "req-1-again" }), body, c.server, now, c.public_key],
    ["upper-case signature", headers(c, { "x-chio-signature": c.signature.toUpperCase() }), body, c.server, now, c.public_key],
    ["another kernel", headers(c), body, c.server, now, "ed25519:d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"],
  ];
  for (const [name, h, b, server, t, key] of bad) {
    assert.throws(() => verifyToolCall(h, b, key, server, { nowMs: t }), (e: unknown) => e instanceof ChioError && e.code === "unauthorized", name);
  }
});

// nowMs is the clock the freshness check reads and maxAgeMs its window: a
// NaN compared false with every skew and let a call captured a year ago
// run, and an infinite window is none. Each is the caller's error
// ("bad_request", as a bad kernel key), never a check turned off.
test("verifyToolCall refuses a clock or window that is not a finite time", () => {
  const c = CASES[0]!;
  const body = Buffer.from(c.body, "utf8");
  const yearLater = c.sent_at_ms + 365 * 86_400_000;
  const bad: [string, { nowMs?: number; maxAgeMs?: number }][] = [
    ["nowMs NaN", { nowMs: NaN }],
    ["nowMs Infinity", { nowMs: Infinity }],
    ["nowMs -Infinity", { nowMs: -Infinity }],
    ["nowMs a string", { nowMs: String(c.sent_at_ms) as unknown as number }],
    ["maxAgeMs NaN", { nowMs: yearLater, maxAgeMs: NaN }],
    ["maxAgeMs Infinity", { nowMs: yearLater, maxAgeMs: Infinity }],
    ["maxAgeMs 0", { nowMs: c.sent_at_ms, maxAgeMs: 0 }],
    ["maxAgeMs negative", { nowMs: c.sent_at_ms, maxAgeMs: -1 }],
  ];
  for (const [name, opts] of bad) {
    assert.throws(() => verifyToolCall(headers(c), body, c.public_key, c.server, opts), (e: unknown) => e instanceof ChioError && e.code === "bad_request", name);
  }
});

// X-Chio-Sent-At is the decimal chiod signs, and nothing else:
// "01800000000123" and "-0" verified here as the signed value, and Go also
// took "+1800000000123" (testdata/sdk/tool_call_sent_at.json, shared with
// the Go and Python SDKs' tests).
test("verifyToolCall refuses an X-Chio-Sent-At spelled otherwise than chiod signs it", () => {
  assert.ok(SENT_AT_SPELLINGS.length > 0);
  for (const sp of SENT_AT_SPELLINGS) {
    const c = CASES.find((v) => v.name === sp.vector);
    assert.ok(c, `no vector ${sp.vector}`);
    assert.throws(
      () => verifyToolCall(headers(c, { "x-chio-sent-at": sp.sent_at }), Buffer.from(c.body, "utf8"), c.public_key, c.server, { nowMs: c.sent_at_ms }),
      (e: unknown) => e instanceof ChioError && e.code === "unauthorized" && e.message.includes("X-Chio-Sent-At must be unix milliseconds"),
      `${sp.vector} with X-Chio-Sent-At ${JSON.stringify(sp.sent_at)}`,
    );
  }
});
