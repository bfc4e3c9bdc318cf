"""confirm's and ask's timeout passing while the question waits for a
human (chiod parked it) is TimedOut naming the call, so a caller who let
the SDK choose the request id can still await the answer or cancel the
question: without it the question stayed in front of the approvers with no
way for the agent to find it again."""

import unittest

import chio

from . import harness
from .test_client import client_for


class HITLPendingTimeout(unittest.IsolatedAsyncioTestCase):
    async def test_confirm_timeout_while_pending_names_the_call(self):
        agent = await harness.agent("confirm")
        c = client_for(agent)
        with self.assertRaises(chio.TimedOut) as cm:
            await c.confirm("Deploy to production?", {"env": "prod"}, timeout=1.0)
        rid = cm.exception.request_id
        self.assertTrue(rid, f"TimedOut names no call: {cm.exception!r}")
        now = await c.status(rid)
        self.assertIsInstance(now, chio.PendingApproval)
        await c.cancel(now.approval_request_id, "test over")


if __name__ == "__main__":
    unittest.main()
