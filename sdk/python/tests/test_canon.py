"""RFC 8785 against the RFC's published vectors (internal/canon/testdata/jcs,
shared with the Go implementation), and chio's strictness on Python values."""

import glob
import json
import math
import os
import random
import struct
import unittest

from chio import CanonicalJSONError, RawJSON, canonicalize
from chio.canon import MAX_DEPTH, canonicalize_text, format_number, jcs, loads_strict

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
JCS = os.path.join(ROOT, "internal", "canon", "testdata", "jcs")


class RFC8785(unittest.TestCase):
    def test_number_serialization(self):
        # RFC 8785 Appendix B: IEEE-754 bits -> serialization.
        n = 0
        with open(os.path.join(JCS, "numbers.txt")) as f:
            for line in f:
                if not line.strip() or line.startswith("#"):
                    continue
                bits, want = line.split()
                x = struct.unpack(">d", bytes.fromhex(bits))[0]
                with self.subTest(bits):
                    self.assertEqual(format_number(x), want)
                    self.assertEqual(jcs([x]), f"[{want}]".encode())
                n += 1
        self.assertEqual(n, 24)

    def test_golden_files(self):
        files = sorted(glob.glob(os.path.join(JCS, "*.in.json")))
        self.assertGreaterEqual(len(files), 3)
        for path in files:
            with self.subTest(os.path.basename(path)):
                with open(path, "rb") as f:
                    text = f.read()
                with open(path.replace(".in.json", ".out.json"), "rb") as f:
                    want = f.read().rstrip(b"\n")
                # Plain RFC 8785 reproduces the RFC's output exactly...
                self.assertEqual(jcs(json.loads(text)), want)
                # ...and chio's strict form agrees, except on the RFC's
                # example that spells numbers inexactly on purpose
                # (333333333.33333329 reads as 333333333.3333333), which
                # chio refuses (SPEC §9).
                if b"333333333.33333329" in text:
                    with self.assertRaises(CanonicalJSONError) as cm:
                        canonicalize_text(text)
                    self.assertEqual(cm.exception.reason, "inexact_number")
                else:
                    self.assertEqual(canonicalize_text(text), want)

    def test_shortest_round_trip(self):
        # Property: every serialization reads back as the same double and
        # uses no more digits than Python's shortest repr.
        rnd = random.Random(8785)
        for _ in range(20000):
            x = struct.unpack(">d", rnd.getrandbits(64).to_bytes(8, "big"))[0]
            if not math.isfinite(x):
                continue
            s = format_number(x)
            self.assertEqual(float(s), x, s)
            digits = lambda t: len(t.split("e")[0].replace("-", "").replace(".", "").strip("0"))
            self.assertLessEqual(digits(s), digits(repr(x)), (s, repr(x)))


class PythonValues(unittest.TestCase):
    def refused(self, value, reason):
        with self.assertRaises(CanonicalJSONError) as cm:
            canonicalize(value)
        self.assertEqual(cm.exception.reason, reason, str(cm.exception))

    def test_integers_are_exact_up_to_2_53(self):
        self.assertEqual(canonicalize([2**53, -(2**53), 0, -0]), b"[9007199254740992,-9007199254740992,0,0]")
        self.refused([2**53 + 1], "unsafe_number")
        self.refused({"n": -(2**53) - 1}, "unsafe_number")
        self.refused([10**30], "unsafe_number")

    def test_floats(self):
        self.assertEqual(canonicalize([1.0, -0.0, 0.1, 5e-324, 1e-7, 2.0**53]), b"[1,0,0.1,5e-324,1e-7,9007199254740992]")
        self.refused([2.0**53 + 2], "unsafe_number")
        self.refused([1e21], "unsafe_number")
        self.refused([math.inf], "number_range")
        self.refused([math.nan], "number_range")

    def test_booleans_are_not_integers(self):
        self.assertEqual(canonicalize({"t": True, "f": False, "n": None}), b'{"f":false,"n":null,"t":true}')

    def test_strings(self):
        self.assertEqual(canonicalize("\u2028\x7f\x00<&>"), '"\u2028\x7f\\u0000<&>"'.encode("utf-8"))
        self.refused("\ud800", "invalid")
        self.refused({"\udc00": 1}, "invalid")

    def test_keys_sort_by_utf16(self):
        self.assertEqual(canonicalize({"\uff00": 1, "\U0001F600": 2}), '{"\U0001F600":2,"\uff00":1}'.encode("utf-8"))

    def test_not_json(self):
        self.refused({1: "x"}, "invalid")
        self.refused({"s": {1, 2}}, "invalid")
        self.refused(b"bytes", "invalid")

    def test_depth(self):
        v = []
        for _ in range(MAX_DEPTH - 1):
            v = [v]
        canonicalize(v)
        self.refused([v], "too_deep")
        # A cycle is refused by the depth limit, not a RecursionError.
        cyc = []
        cyc.append(cyc)
        self.refused(cyc, "too_deep")

    def test_raw_json_keeps_spelling_checks(self):
        self.assertEqual(canonicalize({"a": RawJSON('{"x": 1.50}')}), b'{"a":{"x":1.5}}')
        with self.assertRaises(CanonicalJSONError) as cm:
            RawJSON('{"x": 9007199254740993.0}')  # a float would already be 2^53
        self.assertEqual(cm.exception.reason, "inexact_number")

    def test_loads_strict_limits(self):
        with self.assertRaises(CanonicalJSONError) as cm:
            loads_strict(b"\xef\xbb\xbf{}")  # a UTF-8 byte order mark
        self.assertEqual(cm.exception.reason, "invalid")
        # Brackets inside a string do not count as depth.
        self.assertEqual(loads_strict('"' + "[" * 100 + '"'), "[" * 100)

    def test_unterminated_string_is_invalid_not_too_deep(self):
        """A string that never ends is invalid JSON (as chiod's
        internal/canon says); the depth scan counted the brackets inside
        it and called the text nested deeper than 64. (The same scan, on a
        string never ended, rescanned the rest of the text from every
        quote: quadratic, 1.4 s for 16 KB of LLM-produced RawJSON.)"""
        for text in ('"' + "[" * 65, '["' + "[" * 100, '{"a":"' + "{" * 70, r'["a\\", "' + "[" * 70, r'["a\"' + "[" * 70):
            with self.subTest(text=text[:12]):
                with self.assertRaises(CanonicalJSONError) as cm:
                    loads_strict(text)
                self.assertEqual(cm.exception.reason, "invalid", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
