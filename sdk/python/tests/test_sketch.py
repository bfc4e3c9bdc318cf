"""The seed's Python sketch (seeds/chio-hitl-protocol.txt, "Python Sketch"),
run exactly as written against a real chiod.

SKETCH is the seed's text, unchanged: it is compiled with top-level await
allowed and run with CHIO_URL, CHIO_KEY and CHIO_CAPABILITY pointing at a
fresh agent. The two names the sketch leaves to its surroundings are
supplied around it: `signed_token_from_channel` is a future that a channel
resolves with the approver's signed token once chiod has asked for it, and
`print` is captured so that the test can read what the sketch reports.

Which outcome the sketch meets depends only on the agent's capability (see
testdata/sdk/policy.toml): allowed, pending → approved (by the real
`chio approval approve … --key examples/keys/finance-lead.pem`, or by an
approver signing with this SDK) → resumed with the output, denied by a
human, denied by policy.
"""

import ast
import asyncio
import hashlib
import json
import unittest

from chio import Client, PrivateKey, sign_approval, sign_denial

from . import harness

SKETCH = '''
from chio import Client, PendingApproval, ToolDenied

client = Client.from_env()

result = await client.call_tool(
    server="payment-server",
    tool="issue_refund",
    arguments={"customer_id": "cust-9012", "amount": 450, "currency": "USD"},
    governed_intent={
        "purpose": "Customer requested refund for order #8834",
        "max_amount": {"units": 450, "currency": "USD"},
    },
)

if isinstance(result, PendingApproval):
    # Persist the approval request id in your workflow engine.
    print(f"Awaiting approval: {result.approval_request_id}")
    print(f"Deadline: {result.deadline}")
    print(f"Summary shown to approver: {result.summary}")

    # Later, when you have the signed token back from the channel:
    result = await client.resume_with_approval(
        approval_token=signed_token_from_channel,
    )

if isinstance(result, ToolDenied):
    raise RuntimeError(f"Tool denied: {result.reason}")

print("Refund issued:", result.output)
'''

CODE = compile(SKETCH, "<seed: Python Sketch>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


class Run:
    """One run of the sketch: its printed lines, the result it ended with."""

    def __init__(self, agent, channel=None):
        self.agent, self.channel, self.lines, self.globals = agent, channel, [], {}

    async def __call__(self):
        token = asyncio.get_running_loop().create_future()
        channel = asyncio.ensure_future(self.channel(self.agent, token)) if self.channel else None
        self.globals = {"__name__": "seed_sketch", "signed_token_from_channel": token, "print": self._print}
        try:
            with harness.environ(self.agent.env(harness.chiod().url)):
                # The sketch's code object runs as a coroutine because of its
                # top-level awaits.
                await eval(CODE, self.globals)
        finally:
            if channel:
                if not channel.done():
                    channel.cancel()
                else:
                    channel.result()  # a channel that failed fails the test
        return self

    def _print(self, *args):
        self.lines.append(" ".join(str(a) for a in args))

    @property
    def result(self):
        return self.globals["result"]


# --- channels: where the human's decision comes from ----------------------


async def _next_request(agent):
    """The approval request chiod parked for agent, as a polling channel
    (GET /approvals/pending with a reader token) sees it."""
    reader = Client(harness.chiod().url, bearer=harness.chiod().admin_token)
    while True:
        for req in await reader.pending():
            if req.get("subject_id") == agent.public_key:
                return req
        await asyncio.sleep(0.05)


async def cli_channel(agent, token):
    """The Finance Lead runs the real CLI, which signs and presents the
    token; the channel hands the agent the token as chiod recorded it."""
    req = await _next_request(agent)
    out = await asyncio.to_thread(harness.chiod().approve, req["approval_id"], "--note", "verified")
    assert "approved " + req["approval_id"] in out.stdout, out.stdout
    reader = Client(harness.chiod().url, bearer=harness.chiod().admin_token)
    votes = (await reader.approval(req["approval_id"]))["votes"]
    token.set_result(json.dumps(votes[0]["token"]))


def sdk_channel(decide):
    async def channel(agent, token):
        req = await _next_request(agent)
        token.set_result(decide(req, PrivateKey.load(harness.FINANCE_LEAD_KEY)))

    return channel


def refund_id(request_id):
    """The demo tool derives its refund id from the request id."""
    return "rf-" + hashlib.sha256(request_id.encode()).hexdigest()[:16]


def setUpModule():
    harness.chiod()  # start it outside any test's event loop


class SeedSketch(unittest.IsolatedAsyncioTestCase):
    def assert_refunded(self, run):
        out = run.result.output
        self.assertEqual(out["status"], "issued")
        self.assertEqual((out["amount"], out["currency"], out["customer_id"]), (450, "USD", "cust-9012"))
        self.assertEqual(out["refund_id"], refund_id(run.result.request_id))
        self.assertEqual(run.lines[-1], f"Refund issued: {out}")

    async def test_allowed(self):
        run = await Run(await harness.agent("refunds-auto"))()
        self.assert_refunded(run)
        self.assertEqual(len(run.lines), 1)  # never pending

    async def test_pending_approved_with_the_cli_then_resumed(self):
        run = await Run(await harness.agent("refunds"), cli_channel)()
        self.assertTrue(run.lines[0].startswith("Awaiting approval: ar-"), run.lines)
        self.assertRegex(run.lines[1], r"^Deadline: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\+00:00$")
        self.assertIn("450", run.lines[2])
        self.assert_refunded(run)
        self.assertEqual(run.result.approval.approver_name, "Finance Lead")
        self.assertEqual(run.result.approval.note, "verified")

    async def test_pending_resumed_with_a_token_signed_by_the_approver(self):
        run = await Run(await harness.agent("refunds"), sdk_channel(lambda req, key: sign_approval(req, key)))()
        self.assertTrue(run.lines[0].startswith("Awaiting approval: ar-"))
        self.assert_refunded(run)
        self.assertEqual(run.result.approval_request_id, run.lines[0].split()[-1])

    async def test_denied_by_a_human(self):
        deny = sdk_channel(lambda req, key: sign_denial(req, key, "duplicate of refund rf-1"))
        run = Run(await harness.agent("refunds"), deny)
        with self.assertRaisesRegex(RuntimeError, r"^Tool denied: duplicate of refund rf-1$"):
            await run()
        self.assertTrue(run.lines[0].startswith("Awaiting approval: ar-"))
        self.assertEqual((run.result.status, run.result.guard), ("denied", "human-approval"))
        self.assertEqual(run.result.approval.approver_name, "Finance Lead")

    async def test_denied_by_policy(self):
        # A capability without a refund grant: capability-scope denies.
        run = Run(await harness.agent("echo"))
        with self.assertRaisesRegex(RuntimeError, r"^Tool denied: "):
            await run()
        self.assertEqual(run.result.guard, "capability-scope")
        self.assertEqual(run.lines, [])


if __name__ == "__main__":
    unittest.main()
