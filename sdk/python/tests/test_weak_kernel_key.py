"""verify_tool_call refuses a kernel key SPEC §2 calls weak, as the Go
toolserver.NewVerifier does (keys.ParsePublicKey): a tool server that pinned
the identity key (ed25519:0100…00) would otherwise run any call, since every
signature with R = [s]B verifies under it (OpenSSL, like crypto/ed25519,
does not refuse small-order keys)."""

import json
import os
import unittest

from chio import verify_tool_call
from chio.toolcall import SENT_AT_HEADER, SERVER_HEADER, SIGNATURE_HEADER

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))

with open(os.path.join(ROOT, "testdata", "vectors", "tool_call.json"), encoding="utf-8") as f:
    CASE = json.load(f)["cases"][0]

# Each is refused by the Go implementation (internal/keys): the eight points
# of small order (some also with the sign bit set), encodings of y ≥ p and of
# x = 0 with the sign bit set, and a y that is on no point of the curve.
WEAK = {
    "identity": "01" + "00" * 31,
    "identity, sign bit set": "01" + "00" * 30 + "80",
    "order 2": "ec" + "ff" * 30 + "7f",
    "order 2, sign bit set": "ec" + "ff" * 31,
    "order 4": "00" * 32,
    "order 4, sign bit set": "00" * 31 + "80",
    "order 8": "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
    "order 8, sign bit set": "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
    "order 8 (-y)": "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
    "order 8 (-y), sign bit set": "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
    "y = p (non-canonical)": "ed" + "ff" * 30 + "7f",
    "not a curve point": "02" + "00" * 31,
}


class WeakKernelKey(unittest.TestCase):
    def test_identity_key_would_run_a_forged_call(self):
        # R = identity, s = 0: [0]B = R + [k]identity for every message.
        forged = "01" + "00" * 31 + "00" * 32
        body = CASE["body"].encode()
        h = {SERVER_HEADER: CASE["server"], SENT_AT_HEADER: str(CASE["sent_at_ms"]), SIGNATURE_HEADER: forged,
             "Idempotency-Key": json.loads(CASE["body"])["request_id"]}
        with self.assertRaises(ValueError):
            verify_tool_call(h, body, "ed25519:" + WEAK["identity"], CASE["server"], now=CASE["sent_at_ms"] / 1000)

    def test_weak_keys_refused_before_any_call_is_read(self):
        for name, raw in WEAK.items():
            with self.subTest(name):
                with self.assertRaisesRegex(ValueError, "kernel_key"):
                    verify_tool_call({}, b"", "ed25519:" + raw, CASE["server"])

    def test_a_good_key_still_verifies(self):
        body = CASE["body"].encode()
        h = {SERVER_HEADER: CASE["server"], SENT_AT_HEADER: str(CASE["sent_at_ms"]), SIGNATURE_HEADER: CASE["signature"],
             "Idempotency-Key": json.loads(CASE["body"])["request_id"]}
        verify_tool_call(h, body, CASE["public_key"], CASE["server"], now=CASE["sent_at_ms"] / 1000)


if __name__ == "__main__":
    unittest.main()
