// verifyToolCall refuses a kernel key SPEC §2 calls weak, as the Go
// toolserver.NewVerifier does (keys.ParsePublicKey): a tool server that
// pinned the identity key (ed25519:0100…00) would otherwise run any call,
// since every signature with R = [s]B verifies under it (Node's OpenSSL,
// like crypto/ed25519, does not refuse small-order keys).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { ChioError, verifyToolCall } from "@chio-protocol/sdk";

import { VECTORS } from "./paths.js";

interface Case { public_key: string; server: string; sent_at_ms: number; body: string; signature: string }
const CASE = (JSON.parse(readFileSync(join(VECTORS, "tool_call.json"), "utf8")) as { cases: Case[] }).cases[0]!;

function headers(signature: string): Record<string, string> {
  const key = (JSON.parse(CASE.body) as { request_id: string }).request_id;
  return { "x-chio-server": CASE.server, "x-chio-sent-at": String(CASE.sent_at_ms), "x-chio-signature": signature, "idempotency-key": key };
}

// Each is refused by the Go implementation (internal/keys): the eight points
// of small order (some also with the sign bit set), encodings of y ≥ p and of
// x = 0 with the sign bit set, and a y that is on no point of the curve.
const WEAK: Record<string, string> = {
  identity: "01" + "00".repeat(31),
  "identity, sign bit set": "01" + "00".repeat(30) + "80",
  "order 2": "ec" + "ff".repeat(30) + "7f",
  "order 2, sign bit set": "ec" + "ff".repeat(31),
  "order 4": "00".repeat(32),
  "order 4, sign bit set": "00".repeat(31) + "80",
  "order 8": "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
  "order 8, sign bit set": "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
  "order 8 (-y)": "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
  "order 8 (-y), sign bit set": "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
  "y = p (non-canonical)": "ed" + "ff".repeat(30) + "7f",
  "not a curve point": "02" + "00".repeat(31),
};

const badRequest = (e: unknown) => e instanceof ChioError && e.code === "bad_request" && /kernelKey/.test(e.message);

test("the identity kernel key would run a forged call", () => {
  // R = identity, s = 0: [0]B = R + [k]identity for every message.
  const forged = "01" + "00".repeat(31) + "00".repeat(32);
  assert.throws(() => verifyToolCall(headers(forged), Buffer.from(CASE.body, "utf8"), "ed25519:" + WEAK.identity, CASE.server, { nowMs: CASE.sent_at_ms }),
    badRequest);
});

test("weak kernel keys are refused before any call is read", () => {
  for (const [name, raw] of Object.entries(WEAK)) {
    assert.throws(() => verifyToolCall({}, Buffer.alloc(0), "ed25519:" + raw, CASE.server), badRequest, name);
  }
});

test("a good kernel key still verifies", () => {
  verifyToolCall(headers(CASE.signature), Buffer.from(CASE.body, "utf8"), CASE.public_key, CASE.server, { nowMs: CASE.sent_at_ms });
});
