// verifyToolCall takes exactly the kernel keys the Go implementation takes
// (testdata/vectors/public_keys.json, keys.ParsePublicKey's verdicts):
// among the refused, a real key A plus a point T of small order. Such a key
// is no key an Ed25519 generator makes, yet A's private key signs for it (a
// signer that hashes A+T in place of A: the cofactorless check, OpenSSL's
// as crypto/ed25519's, passes whenever [k]T is the identity, every other
// message for T of order 2), so one private key would pass as two keys;
// chiod refuses it wherever it takes a key.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { ChioError, verifyToolCall } from "@chio-protocol/sdk";

import { VECTORS } from "./paths.js";

interface Case { name: string; public_key: string; verdict: string }
const CASES = (JSON.parse(readFileSync(join(VECTORS, "public_keys.json"), "utf8")) as { cases: Case[] }).cases;

test("verifyToolCall takes exactly the kernel keys Go takes", () => {
  assert.ok(CASES.some((c) => c.verdict === "torsion"));
  for (const c of CASES) {
    const call = () => verifyToolCall({}, Buffer.from("{}"), c.public_key, "payments");
    if (c.verdict === "ok") {
      // The key is taken; the call (no headers) is not.
      assert.throws(call, (e: unknown) => e instanceof ChioError && e.code === "unauthorized", `${c.name} (${c.public_key})`);
      continue;
    }
    assert.throws(call, (e: unknown) => e instanceof ChioError && e.code === "bad_request" && /kernelKey/.test(e.message) &&
      (c.verdict !== "torsion" || /torsion component/.test(e.message)), `${c.name} (${c.public_key}): want ${c.verdict}`);
  }
});
