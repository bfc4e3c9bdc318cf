"""A lost answer is "outcome unknown", never "nothing was allowed"."""

import time
import unittest

import chio
from chio import Client

from . import harness

REFUND = dict(
    arguments={"customer_id": "cust-9012", "amount": 450, "currency": "USD"},
    governed_intent={"purpose": "Refund order #8834", "max_amount": {"units": 450, "currency": "USD"}},
)


def setUpModule():
    harness.chiod()


class LostAnswerIsNotNothingAllowed(unittest.IsolatedAsyncioTestCase):
    async def test_lost_answers_are_not_an_unavailable_that_says_nothing_was_allowed(self):
        """chio.Unavailable means "chiod could not decide; nothing was
        allowed". A call whose answers were all lost after chiod ran it
        (dropped, a gateway's 502 after forwarding, or dropped and then
        chiod's own 503) must raise OutcomeUnknown naming the request id,
        never an Unavailable: code that catches Unavailable as "nothing
        happened, try again" (with a new request id, the default) would
        refund twice."""
        agent = await harness.agent("refunds-auto")
        for faults in (["drop"] * 4, ["502"] * 4, ["drop", "503", "503", "503"]):
            with self.subTest(faults=faults):
                proxy = harness.FlakyProxy(harness.chiod().url, faults)
                self.addCleanup(proxy.close)
                c = Client(proxy.url, key_file=agent.key_file, capability_file=agent.capability_file)
                rid = f"lost-answer-{faults[0]}-{faults[1]}-{time.time_ns()}"
                with self.assertRaises(chio.ChioError) as cm:
                    await c.call_tool("payment-server", "issue_refund", **REFUND, request_id=rid)
                ran = [x["request_id"] for x in harness.chiod().ledger()].count(rid)
                self.assertEqual(ran, 1, "the refund should have been issued exactly once")
                self.assertNotIsInstance(
                    cm.exception,
                    chio.Unavailable,
                    f"the refund WAS issued, yet call_tool raised {type(cm.exception).__name__}, an Unavailable "
                    f"(documented: 'nothing was allowed'): {cm.exception}",
                )
                self.assertIsInstance(cm.exception, chio.OutcomeUnknown)
                self.assertEqual(cm.exception.request_id, rid)
                self.assertEqual(len(proxy.bodies), 4)


if __name__ == "__main__":
    unittest.main()
