"""The SDK accepts exactly the public keys the Go implementation accepts
(testdata/vectors/public_keys.json, keys.ParsePublicKey's verdicts): among
the refused, a real key A plus a point T of small order. Such a key is no
key an Ed25519 generator makes, yet A's private key signs for it (a
signer that hashes A+T in place of A: the cofactorless check, OpenSSL's as
crypto/ed25519's, passes whenever [k]T is the identity, every other
message for T of order 2), so one private key would pass as two keys;
chiod refuses it wherever it takes a key."""

import json
import os
import unittest

from chio import Unauthorized, verify_tool_call
from chio.keys import public_key_bytes

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
VECTORS = os.path.join(ROOT, "testdata", "vectors")

with open(os.path.join(VECTORS, "public_keys.json"), encoding="utf-8") as f:
    CASES = json.load(f)["cases"]


class PublicKeyVectors(unittest.TestCase):
    def test_verdicts_match_go(self):
        self.assertIn("torsion", {c["verdict"] for c in CASES})
        for c in CASES:
            with self.subTest(c["name"], key=c["public_key"]):
                if c["verdict"] == "ok":
                    self.assertEqual(public_key_bytes(c["public_key"]).hex(), c["public_key"][len("ed25519:"):])
                    continue
                with self.assertRaises(ValueError) as cm:
                    public_key_bytes(c["public_key"])
                if c["verdict"] == "torsion":
                    self.assertIn("torsion component", str(cm.exception))

    def test_verify_tool_call_takes_the_same_kernel_keys(self):
        for c in CASES:
            with self.subTest(c["name"], key=c["public_key"]):
                if c["verdict"] == "ok":
                    # The key is taken; the call (no headers) is not.
                    with self.assertRaises(Unauthorized):
                        verify_tool_call({}, b"{}", c["public_key"], "payments")
                else:
                    with self.assertRaisesRegex(ValueError, "kernel_key"):
                        verify_tool_call({}, b"{}", c["public_key"], "payments")


if __name__ == "__main__":
    unittest.main()
