"""chiod's 500 vote_recorded: the approver's vote IS recorded."""

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


class VoteRecorded(unittest.IsolatedAsyncioTestCase):
    async def _pending(self):
        agent = await harness.agent("refunds")
        c = Client(harness.chiod().url, key_file=agent.key_file, capability_file=agent.capability_file)
        r = await c.call_tool("payment-server", "issue_refund", **REFUND)
        req = await c.approval(r.approval_request_id)
        return agent, c, r.approval_request_id, chio.sign_approval(req, chio.PrivateKey.load(harness.FINANCE_LEAD_KEY))

    async def test_respond_raises_vote_recorded(self):
        """A 500 vote_recorded used to raise OutcomeUnknown ("it may have
        run; retry"): an approver's program was never told the vote IS
        recorded and must not be cast again."""
        _, c, aid, token = await self._pending()
        proxy = harness.FlakyProxy(harness.chiod().url, [], vote_recorded=True)
        self.addCleanup(proxy.close)
        with self.assertRaises(chio.ChioError) as cm:
            await Client(proxy.url).respond(aid, token)
        e = cm.exception
        self.assertIsInstance(e, chio.VoteRecorded, f"the vote is recorded, yet respond raised {type(e).__name__}: {e}")
        self.assertNotIsInstance(e, chio.OutcomeUnknown)
        self.assertNotIsInstance(e, chio.Unavailable)
        self.assertEqual((e.status, e.code), (500, "vote_recorded"))
        self.assertIn("is recorded", str(e))
        self.assertFalse(chio.errors.retryable(e))
        # The vote is chiod's: the same token again is refused as before.
        with self.assertRaises(chio.Conflict):
            await c.respond(aid, token)

    async def test_resume_does_not_vote_again(self):
        """resume_with_approval took the 500 for a lost answer and presented
        the token again; a recorded vote goes straight to the wait."""
        agent, _, aid, token = await self._pending()
        proxy = harness.FlakyProxy(harness.chiod().url, [], vote_recorded=True)
        self.addCleanup(proxy.close)
        agent_via_proxy = Client(proxy.url, key_file=agent.key_file, capability_file=agent.capability_file)
        done = await agent_via_proxy.resume_with_approval(approval_token=token, timeout=30)
        self.assertIsInstance(done, chio.Allowed)
        self.assertEqual(proxy.responds, 1, "the recorded vote's token was presented again")


if __name__ == "__main__":
    unittest.main()
