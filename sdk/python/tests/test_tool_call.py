"""verify_tool_call: a tool server runs only calls chio's kernel signed for
it (testdata/vectors/tool_call.json, written by the Go implementation and
checked there by toolserver.Verifier)."""

import json
import os
import unittest

from chio import Unauthorized, verify_tool_call
from chio.toolcall import SENT_AT_HEADER, SERVER_HEADER, SIGNATURE_HEADER, tool_call_message

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))

with open(os.path.join(ROOT, "testdata", "vectors", "tool_call.json"), encoding="utf-8") as f:
    CASES = json.load(f)["cases"]
with open(os.path.join(ROOT, "testdata", "sdk", "tool_call_sent_at.json"), encoding="utf-8") as f:
    SENT_AT_SPELLINGS = json.load(f)["cases"]


def headers(c, **over):
    h = {SERVER_HEADER: c["server"], SENT_AT_HEADER: str(c["sent_at_ms"]), SIGNATURE_HEADER: c["signature"],
         # chiod sends the body's request_id as the Idempotency-Key.
         "Idempotency-Key": json.loads(c["body"])["request_id"]}
    h.update(over)
    return h


class ToolCall(unittest.TestCase):
    def test_vectors_verify(self):
        for c in CASES:
            with self.subTest(c["name"]):
                body = c["body"].encode()
                self.assertEqual(tool_call_message(c["server"], c["sent_at_ms"], body).decode(), c["message"])
                # Header names in any case, as HTTP servers pass them on.
                lower = {k.lower(): v for k, v in headers(c).items()}
                verify_tool_call(lower, body, c["public_key"], c["server"], now=c["sent_at_ms"] / 1000)

    def test_refusals(self):
        c = CASES[0]
        body, now = c["body"].encode(), c["sent_at_ms"] / 1000
        bad = {
            "no headers (an agent calling the tool directly)": ({}, body, c["server"], now),
            "changed body": (headers(c), body.replace(b"450", b"450000"), c["server"], now),
            "another server": (headers(c), body, "ledger", now),
            "another server claimed": (headers(c, **{SERVER_HEADER: "ledger"}), body, "ledger", now),
            "stale": (headers(c), body, c["server"], now + 301),
            "from the future": (headers(c), body, c["server"], now - 301),
            "upper-case signature": (headers(c, **{SIGNATURE_HEADER: c["signature"].upper()}), body, c["server"], now),
            "sent_at not a number": (headers(c, **{SENT_AT_HEADER: "1e12"}), body, c["server"], now),
            # Not a number either: int() raised ValueError, not Unauthorized
            # (a server answering Unauthorized with 401 answered 500).
            "sent_at with two minus signs": (headers(c, **{SENT_AT_HEADER: "--" + str(c["sent_at_ms"])}), body, c["server"], now),
            # Digits past Python's int() limit (4300) raised ValueError too;
            # Go's ParseInt refuses anything beyond int64 as not a number.
            "sent_at of 5000 digits": (headers(c, **{SENT_AT_HEADER: "1" * 5000}), body, c["server"], now),
            # The signature covers the body, not the key a deduplicating
            # server keys on: a captured call re-sent under a fresh key
            # would run again.
            "replayed under another Idempotency-Key": (headers(c, **{"Idempotency-Key": "req-1-again"}), body, c["server"], now),
            "no Idempotency-Key": ({k: v for k, v in headers(c).items() if k != "Idempotency-Key"}, body, c["server"], now),
        }
        for name, (h, b, server, t) in bad.items():
            with self.subTest(name):
                with self.assertRaises(Unauthorized):
                    verify_tool_call(h, b, c["public_key"], server, now=t)
        other = "ed25519:" + "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
        with self.assertRaises(Unauthorized):
            verify_tool_call(headers(c), body, other, c["server"], now=now)

    def test_max_age_not_a_number_is_refused(self):
        """max_age bounds a call's age; a NaN (a setting parsed wrong)
        compared false with every age and let a call captured a year ago
        run. It is a configuration error (ValueError, as a bad kernel_key),
        never an unbounded window."""
        c = CASES[0]
        year_later = c["sent_at_ms"] / 1000 + 365 * 86400
        for max_age in (float("nan"), "300", None):
            with self.subTest(max_age=max_age):
                with self.assertRaises((ValueError, Unauthorized)):
                    verify_tool_call(headers(c), c["body"].encode(), c["public_key"], c["server"], now=year_later, max_age=max_age)

    def test_now_not_a_finite_time_is_refused(self):
        """now is the clock the freshness check reads; a NaN (a clock read
        wrong) compared false with every skew and let a call captured a
        year ago run, and an infinity is no time either. Each is a caller's
        error (ValueError, as a bad max_age), never a check turned off or
        a refusal that blames the call."""
        c = CASES[0]
        for now in (float("nan"), float("inf"), float("-inf"), True, str(c["sent_at_ms"] / 1000)):
            with self.subTest(now=now):
                with self.assertRaises(ValueError):
                    verify_tool_call(headers(c), c["body"].encode(), c["public_key"], c["server"], now=now)

    def test_max_age_infinite_is_refused(self):
        """An infinite max_age is no bound at all: a call captured a year
        ago ran. It is refused as a NaN is (ValueError)."""
        c = CASES[0]
        year_later = c["sent_at_ms"] / 1000 + 365 * 86400
        with self.assertRaises(ValueError):
            verify_tool_call(headers(c), c["body"].encode(), c["public_key"], c["server"], now=year_later, max_age=float("inf"))

    def test_sent_at_spelled_otherwise_is_refused(self):
        """X-Chio-Sent-At is the decimal chiod signs, and nothing else:
        "01800000000123" and "-0" verified here as the signed value, and Go
        also took "+1800000000123" (testdata/sdk/tool_call_sent_at.json,
        shared with the Go and TypeScript SDKs' tests)."""
        self.assertTrue(SENT_AT_SPELLINGS)
        by_name = {c["name"]: c for c in CASES}
        for sp in SENT_AT_SPELLINGS:
            c = by_name[sp["vector"]]
            with self.subTest(vector=sp["vector"], sent_at=sp["sent_at"]):
                with self.assertRaisesRegex(Unauthorized, "X-Chio-Sent-At must be unix milliseconds"):
                    verify_tool_call(headers(c, **{SENT_AT_HEADER: sp["sent_at"]}), c["body"].encode(), c["public_key"], c["server"], now=c["sent_at_ms"] / 1000)


if __name__ == "__main__":
    unittest.main()
