"""docs/agent-developer.md's Python example is examples/refund_agent.py,
verbatim, and it runs: park an approval in a workflow store, exit, and
finish the call later from other processes; withdraw a parked call; report
a refund the tool refused."""

import os
import re
import subprocess
import sys
import tempfile
import unittest

from . import harness

EXAMPLE = os.path.join(harness.ROOT, "sdk", "python", "examples", "refund_agent.py")
DOCS = os.path.join(harness.ROOT, "docs", "agent-developer.md")


def doc_block(marker: str) -> str:
    """The fenced code block that follows <!-- marker --> in the docs."""
    with open(DOCS, encoding="utf-8") as f:
        m = re.search(r"<!-- " + re.escape(marker) + r" -->\s*```\w*\n(.*?)```", f.read(), re.S)
    if not m:
        raise AssertionError(f"no code block after <!-- {marker} --> in {DOCS}")
    return m.group(1)


class DocsExample(unittest.TestCase):
    def test_docs_show_the_tested_file(self):
        with open(EXAMPLE, encoding="utf-8") as f:
            self.assertEqual(doc_block("sdk/python/examples/refund_agent.py"), f.read())

    def test_park_then_resume_from_other_processes(self):
        d = harness.chiod()
        agent = d.new_agent("demo-refunds")
        work = tempfile.mkdtemp(prefix="chio-py-docs-")
        env = {**os.environ, **agent.env(d.url), "PYTHONPATH": os.path.join(harness.ROOT, "sdk", "python")}

        def step(*args):
            p = subprocess.run([sys.executable, EXAMPLE, *args], cwd=work, env=env, capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr)
            return p.stdout.strip()

        out = step("request", "8834", "450")
        m = re.fullmatch(r"order 8834: parked (ar-\S+) until \S+ \S+: .*450.*", out)
        self.assertTrue(m, out)
        self.assertEqual(step("resume", "0.5"), "order 8834: still waiting for a human")
        d.approve(m.group(1))
        self.assertRegex(step("resume", "30"), r"^order 8834: refund rf-[0-9a-f]{16} issued \(approved by Finance Lead\)$")
        self.assertEqual(step("resume", "30"), "")  # nothing left parked
        # Replaying the step gets the stored outcome; the refund is not made twice.
        self.assertRegex(step("request", "8834", "450"), r"^order 8834: refund rf-[0-9a-f]{16} issued")
        self.assertEqual(sum(e["request_id"].startswith("refund-order-8834-") for e in d.ledger()), 1)
        # Below the threshold no human is asked.
        self.assertRegex(step("request", "17", "50"), r"^order 17: refund rf-[0-9a-f]{16} issued$")

        # Withdrawn before a human decided: cancelled, nothing left parked, no refund.
        self.assertRegex(step("request", "9001", "450"), r"^order 9001: parked ar-")
        self.assertEqual(step("cancel", "9001", "customer withdrew the request"), "order 9001: cancelled: customer withdrew the request")
        self.assertEqual(step("resume", "30"), "")
        self.assertFalse(any(e["request_id"].startswith("refund-order-9001-") for e in d.ledger()))
        # Too late to withdraw: the human's decision stands.
        m = re.fullmatch(r"order 9002: parked (ar-\S+) until .*", step("request", "9002", "450"))
        self.assertTrue(m)
        d.approve(m.group(1))
        self.assertRegex(step("cancel", "9002", "changed my mind"), r"^order 9002: refund rf-[0-9a-f]{16} issued \(approved by Finance Lead\)$")
        # The tool refuses a zero refund: a failure, not an output.
        self.assertEqual(step("request", "18", "0"), "order 18: the refund failed (tool_error): invalid arguments: amount must be > 0")


if __name__ == "__main__":
    unittest.main()
