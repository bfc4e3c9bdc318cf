"""chiod's answer to a vote whose own commit may or may not have landed."""

import unittest

import chio
from chio import Client

from . import harness
from .test_vote_recorded import REFUND


def setUpModule():
    harness.chiod()


class VoteUncertain(unittest.IsolatedAsyncioTestCase):
    async def _pending(self):
        agent = await harness.agent("refunds")
        c = Client(harness.chiod().url, key_file=agent.key_file, capability_file=agent.capability_file)
        r = await c.call_tool("payment-server", "issue_refund", **REFUND)
        req = await c.approval(r.approval_request_id)
        return agent, c, r.approval_request_id, chio.sign_approval(req, chio.PrivateKey.load(harness.FINANCE_LEAD_KEY))

    async def test_respond_raises_vote_uncertain(self):
        """chiod's answer (testdata/sdk/vote_uncertain.json) was a 503
        "unavailable", which respond raised as Unavailable: "nothing was
        allowed". The vote may have approved, and run, the call."""
        _, c, aid, token = await self._pending()
        proxy = harness.FlakyProxy(harness.chiod().url, [], vote_uncertain=True)
        self.addCleanup(proxy.close)
        with self.assertRaises(chio.ChioError) as cm:
            await Client(proxy.url).respond(aid, token)
        e = cm.exception
        self.assertNotIsInstance(e, chio.Unavailable, f"the vote may be recorded, yet respond raised {type(e).__name__}: {e}")
        self.assertNotIsInstance(e, chio.OutcomeUnknown)
        self.assertNotIsInstance(e, chio.VoteRecorded)
        self.assertIsInstance(e, chio.VoteUncertain)
        self.assertTrue(chio.errors.retryable(e), "the same token again settles it")
        self.assertEqual((e.status, e.code), (503, "vote_uncertain"))
        self.assertIn("may or may not be recorded", str(e))
        # It was recorded: the same token again is refused as a replay.
        with self.assertRaises(chio.Conflict):
            await c.respond(aid, token)

    async def test_resume_presents_the_same_token_again(self):
        """resume_with_approval presents the same token again, which
        settles it: the recorded vote is refused as a replay, and the wait
        tells how the call ended."""
        agent, _, aid, token = await self._pending()
        proxy = harness.FlakyProxy(harness.chiod().url, [], vote_uncertain=True)
        self.addCleanup(proxy.close)
        agent_via_proxy = Client(proxy.url, key_file=agent.key_file, capability_file=agent.capability_file)
        done = await agent_via_proxy.resume_with_approval(approval_token=token, timeout=30)
        self.assertIsInstance(done, chio.Allowed)
        self.assertEqual(proxy.responds, 2, "the uncertain vote's token was not presented again")


class Classification(unittest.TestCase):
    def test_codes(self):
        e = chio.errors.api_error(503, "vote_uncertain", "your vote on ar-1 may or may not be recorded")
        self.assertIsInstance(e, chio.VoteUncertain)
        self.assertNotIsInstance(e, (chio.Unavailable, chio.OutcomeUnknown, chio.VoteRecorded))
        # An SDK that does not know a 5xx code reads it as outcome unknown,
        # never as Unavailable ("nothing allowed").
        self.assertIsInstance(chio.errors.api_error(503, "some_future_code", "x"), chio.OutcomeUnknown)


if __name__ == "__main__":
    unittest.main()
