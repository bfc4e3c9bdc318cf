// The shared vectors in testdata/vectors (written by the Go implementation,
// go test ./internal/vectors -update), reproduced byte for byte.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import {
  CALL_PROOF_DOMAIN,
  CANCEL_PROOF_DOMAIN,
  CanonicalJSONError,
  PrivateKey,
  RawJSON,
  callProof,
  cancelProof,
  canonicalize,
  canonicalizeText,
  message,
  parameterHash,
  signApproval,
  signDenial,
  statusProof,
  type ApprovalRequest,
} from "@chio-protocol/sdk";

import { VECTORS } from "./paths.js";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function load(name: string): any {
  return JSON.parse(readFileSync(join(VECTORS, name), "utf8"));
}

const keys = new Map<string, { name: string; seed_hex: string; pkcs8_pem: string; public_key: string }>(
  load("keys.json").keys.map((k: { name: string }) => [k.name, k]),
);
const key = (name: string): PrivateKey => PrivateKey.fromPEM(keys.get(name)!.pkcs8_pem);

test("keys: PEM and seed give the public key", () => {
  assert.equal(keys.size, 2);
  for (const k of keys.values()) {
    assert.equal(PrivateKey.fromPEM(k.pkcs8_pem).publicKey, k.public_key);
    assert.equal(PrivateKey.fromSeed(Buffer.from(k.seed_hex, "hex")).publicKey, k.public_key);
  }
});

test("canonical JSON", async (t) => {
  const cases = load("canonical.json").cases;
  assert.ok(cases.length > 50);
  for (const c of cases) {
    await t.test(c.name, () => {
      const input: string | Uint8Array = c.input_hex !== undefined ? Buffer.from(c.input_hex, "hex") : (c.input ?? "");
      if (c.refused !== undefined) {
        assert.throws(() => canonicalizeText(input), (e: unknown) => e instanceof CanonicalJSONError && e.reason === c.refused);
        assert.throws(() => new RawJSON(input), CanonicalJSONError);
        // As bytes too: the text decoded from UTF-8 must meet the same rules.
        if (typeof input === "string") assert.throws(() => canonicalizeText(Buffer.from(input, "utf8")), CanonicalJSONError);
      } else {
        assert.equal(canonicalizeText(input), c.output);
        assert.equal(canonicalizeText(Buffer.from(c.output, "utf8")), c.output); // idempotent
      }
    });
  }
});

test("parameter hashes", async (t) => {
  for (const c of load("parameter_hash.json").cases) {
    await t.test(c.name, () => {
      const args = new RawJSON(c.arguments);
      const intent = c.governed_intent === null ? null : new RawJSON(c.governed_intent);
      assert.equal(canonicalize({ server_id: c.server, tool_name: c.tool, arguments: args, governed_intent: intent }), c.canonical);
      assert.equal(parameterHash(c.server, c.tool, args, intent), c.parameter_hash);
      assert.equal(parameterHash(c.server, c.tool, args.value, intent?.value), c.parameter_hash); // parsed values hash alike
    });
  }
});

test("call proofs", async (t) => {
  for (const c of load("call_proof.json").cases) {
    await t.test(c.name, () => {
      const f = {
        requestId: c.request_id, capabilityId: c.capability_id, server: c.server, tool: c.tool,
        parameterHash: c.parameter_hash, issuedAt: c.issued_at,
      };
      assert.equal(
        canonicalize({ request_id: f.requestId, capability_id: f.capabilityId, server: f.server, tool: f.tool, parameter_hash: f.parameterHash, issued_at: f.issuedAt }),
        c.signed,
      );
      assert.deepEqual(callProof(key(c.key), f), { issued_at: c.issued_at, signature: c.signature });
      assert.equal(key(c.key).sign(message(CALL_PROOF_DOMAIN, Buffer.from(c.signed, "utf8"))).toString("hex"), c.signature);
    });
  }
});

test("Chio-Proof status headers", async (t) => {
  for (const c of load("status_proof.json").cases) {
    await t.test(c.name, () => {
      assert.equal(canonicalize({ request_id: c.id, issued_at: c.issued_at }), c.signed);
      assert.equal(statusProof(key(c.key), c.id, c.issued_at), c.header);
    });
  }
});

test("Chio-Proof cancel headers", async (t) => {
  for (const c of load("cancel_proof.json").cases) {
    await t.test(c.name, () => {
      assert.equal(canonicalize({ approval_id: c.approval_id, issued_at: c.issued_at, reason: c.reason }), c.signed);
      assert.equal(cancelProof(key(c.key), c.approval_id, c.reason, c.issued_at), c.header);
      const sig = key(c.key).sign(message(CANCEL_PROOF_DOMAIN, Buffer.from(c.signed, "utf8"))).toString("hex");
      assert.equal(`${c.issued_at}.${sig}`, c.header);
      // Its own domain: a read proof over the same id is another header.
      assert.notEqual(statusProof(key(c.key), c.approval_id, c.issued_at), c.header);
    });
  }
});

test("approval tokens", async (t) => {
  for (const c of load("approval_token.json").cases) {
    await t.test(c.name, () => {
      const req = c.request as ApprovalRequest;
      const common = { ttlSeconds: c.ttl_seconds, issuedAt: c.issued_at, tokenId: c.token_id };
      let tok: string;
      if (c.decision === "denied") {
        tok = signDenial(req, key(c.key), c.note, common);
      } else {
        const opts: Parameters<typeof signApproval>[2] = { ...common };
        if (c.note !== undefined) opts.note = c.note;
        if (c.amended_arguments !== undefined) opts.amendedArguments = new RawJSON(c.amended_arguments);
        if (c.answers !== undefined) {
          // Given as an approver gives them: every answer a list.
          const given = JSON.parse(c.answers) as Record<string, string | string[]>;
          opts.answers = Object.fromEntries(Object.entries(given).map(([k, v]) => [k, Array.isArray(v) ? v : [v]]));
        }
        tok = signApproval(req, key(c.key), opts);
      }
      assert.equal(tok, c.token);
    });
  }
});
