"""chiod's answer to a call, and to a read of one, names the call
(request_id: kernel.Outcome always carries it). An answer naming another
call, or none (a proxy or cache that served another request's answer, a
misrouted load balancer), says nothing about this one: the SDK must not
report it as this call's outcome. call_tool reported another call's
Allowed (and its output) as the result of a call it never learned about;
for it that is OutcomeUnknown (ours may have run: retry or await it under
its request id), for status and await_approval an error. So for the
approval id a cancel's answer and an approval read name."""

import json
import unittest

import chio

from .test_answer_field_types import agent_client, answering, call_tool_is_outcome_unknown, reads_refuse

OTHER_ANSWERS = {
    "another call's allow": {"status": "allowed", "request_id": "req-other", "receipt_id": "rc-1", "output": {"refund": "re_99"}},
    "another call's denial": {"status": "denied", "request_id": "req-other", "reason": "r", "guard": "g"},
    "another call's pending": {"status": "pending_approval", "request_id": "req-other", "approval_request_id": "ar-1"},
    "an allow naming no call": {"status": "allowed", "receipt_id": "rc-1", "output": {"refund": "re_99"}},
}


class AnswerRequestID(unittest.IsolatedAsyncioTestCase):
    async def test_call_answered_for_another_call_is_outcome_unknown(self):
        await call_tool_is_outcome_unknown(self, OTHER_ANSWERS)

    async def test_await_and_status_refuse_another_calls_state(self):
        await reads_refuse(self, OTHER_ANSWERS)

    async def test_cancel_answered_with_another_approvals_call_is_an_error(self):
        """A cancel's answer is the cancelled call: one waiting on another
        approval is not this withdrawal."""
        other = {"status": "cancelled", "request_id": "req-other", "approval_request_id": "ar-other", "reason": "stop"}
        c = agent_client(answering(self, json.dumps(other).encode()))
        try:
            r = await c.cancel("ar-t", "stop")
        except chio.ChioError:
            return
        self.fail(f"cancel of ar-t answered with {other}: returned {r!r}, want an error")

    async def test_await_of_an_approval_answered_with_another_request_is_an_error(self):
        """await_approval("ar-…") reads the approval to learn its call: an
        answer that is another approval request names another call."""
        other = {
            "request": {"approval_id": "ar-other", "request_id": "req-other"},
            "status": "allowed",
            "request_id": "req-other",
            "output": {"refund": "re_99"},
        }
        c = agent_client(answering(self, json.dumps(other).encode()))
        try:
            r = await c.await_approval("ar-t", timeout=5)
        except chio.TimedOut as e:
            self.fail(f"timed out instead of refusing the answer: {e}")
        except chio.ChioError:
            return
        self.fail(f"await of ar-t answered with {other}: returned {r!r}, want an error")


if __name__ == "__main__":
    unittest.main()
