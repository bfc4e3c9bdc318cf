"""The shared vectors in testdata/vectors (written by the Go implementation,
go test ./internal/vectors -update), reproduced byte for byte."""

import json
import os
import unittest

from chio import CanonicalJSONError, PrivateKey, canonicalize, sign_approval, sign_denial
from chio.canon import RawJSON, canonicalize_text
from chio.signing import CALL_PROOF_DOMAIN, CANCEL_PROOF_DOMAIN, call_proof, cancel_proof, message, parameter_hash, status_proof

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
VECTORS = os.path.join(ROOT, "testdata", "vectors")


def load(name):
    with open(os.path.join(VECTORS, name), encoding="utf-8") as f:
        return json.load(f)


def test_keys():
    return {k["name"]: k for k in load("keys.json")["keys"]}


def key(name):
    return PrivateKey.from_pem(test_keys()[name]["pkcs8_pem"])


class Keys(unittest.TestCase):
    def test_pem_and_seed_give_the_public_key(self):
        for k in test_keys().values():
            with self.subTest(k["name"]):
                self.assertEqual(PrivateKey.from_pem(k["pkcs8_pem"]).public_key, k["public_key"])
                self.assertEqual(PrivateKey.from_seed(bytes.fromhex(k["seed_hex"])).public_key, k["public_key"])


class Canonical(unittest.TestCase):
    def test_cases(self):
        cases = load("canonical.json")["cases"]
        self.assertGreater(len(cases), 50)
        for c in cases:
            with self.subTest(c["name"]):
                text = bytes.fromhex(c["input_hex"]) if "input_hex" in c else c.get("input", "")
                if "refused" in c:
                    with self.assertRaises(CanonicalJSONError) as cm:
                        canonicalize_text(text)
                    self.assertEqual(cm.exception.reason, c["refused"], str(cm.exception))
                    # RawJSON is the same gate for arguments.
                    with self.assertRaises(CanonicalJSONError):
                        RawJSON(text)
                else:
                    self.assertEqual(canonicalize_text(text), c["output"].encode("utf-8"))
                    # Idempotent: the output is its own canonical form.
                    self.assertEqual(canonicalize_text(c["output"]), c["output"].encode("utf-8"))


class ParameterHash(unittest.TestCase):
    def test_cases(self):
        for c in load("parameter_hash.json")["cases"]:
            with self.subTest(c["name"]):
                args = RawJSON(c["arguments"])
                intent = None if c["governed_intent"] is None else RawJSON(c["governed_intent"])
                pre = canonicalize({"server_id": c["server"], "tool_name": c["tool"], "arguments": args, "governed_intent": intent})
                self.assertEqual(pre, c["canonical"].encode("utf-8"))
                self.assertEqual(parameter_hash(c["server"], c["tool"], args, intent), c["parameter_hash"])
                # Parsed values hash the same as the text.
                self.assertEqual(parameter_hash(c["server"], c["tool"], args.value, intent and intent.value), c["parameter_hash"])


class CallProof(unittest.TestCase):
    def test_cases(self):
        for c in load("call_proof.json")["cases"]:
            with self.subTest(c["name"]):
                fields = {k: c[k] for k in ("request_id", "capability_id", "server", "tool", "parameter_hash", "issued_at")}
                self.assertEqual(canonicalize(fields), c["signed"].encode("utf-8"))
                proof = call_proof(key(c["key"]), **fields)
                self.assertEqual(proof, {"issued_at": c["issued_at"], "signature": c["signature"]})
                self.assertEqual(key(c["key"]).sign(message(CALL_PROOF_DOMAIN, c["signed"].encode())).hex(), c["signature"])


class StatusProof(unittest.TestCase):
    def test_cases(self):
        for c in load("status_proof.json")["cases"]:
            with self.subTest(c["name"]):
                self.assertEqual(canonicalize({"request_id": c["id"], "issued_at": c["issued_at"]}), c["signed"].encode("utf-8"))
                self.assertEqual(status_proof(key(c["key"]), c["id"], c["issued_at"]), c["header"])


class CancelProof(unittest.TestCase):
    def test_cases(self):
        for c in load("cancel_proof.json")["cases"]:
            with self.subTest(c["name"]):
                fields = {"approval_id": c["approval_id"], "issued_at": c["issued_at"], "reason": c["reason"]}
                self.assertEqual(canonicalize(fields), c["signed"].encode("utf-8"))
                self.assertEqual(cancel_proof(key(c["key"]), c["approval_id"], c["reason"], c["issued_at"]), c["header"])
                sig = key(c["key"]).sign(message(CANCEL_PROOF_DOMAIN, c["signed"].encode("utf-8"))).hex()
                self.assertEqual(f"{c['issued_at']}.{sig}", c["header"])
                # Its own domain: a read proof over the same id is another header.
                self.assertNotEqual(status_proof(key(c["key"]), c["approval_id"], c["issued_at"]), c["header"])


class ApprovalToken(unittest.TestCase):
    def test_cases(self):
        for c in load("approval_token.json")["cases"]:
            with self.subTest(c["name"]):
                req = dict(c["request"])
                common = dict(ttl=c["ttl_seconds"], issued_at=c["issued_at"], token_id=c["token_id"])
                if c["decision"] == "denied":
                    tok = sign_denial(req, key(c["key"]), c["note"], **common)
                else:
                    answers = None
                    if "answers" in c:
                        # Given as the approver gives them: every answer a list.
                        answers = {k: v if isinstance(v, list) else [v] for k, v in json.loads(c["answers"]).items()}
                    tok = sign_approval(
                        req,
                        key(c["key"]),
                        note=c.get("note"),
                        amended_arguments=RawJSON(c["amended_arguments"]) if "amended_arguments" in c else None,
                        answers=answers,
                        **common,
                    )
                self.assertEqual(tok, c["token"].encode("utf-8"))


if __name__ == "__main__":
    unittest.main()
