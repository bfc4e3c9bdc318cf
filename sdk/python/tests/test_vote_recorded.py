"""chiod's 500 vote_recorded: the approver's vote IS recorded."""

import http.server
import json
import threading
import unittest
import urllib.error
import urllib.request

import chio
from chio import Client

from . import harness

REFUND = dict(
    arguments={"customer_id": "cust-9012", "amount": 450, "currency": "USD"},
    governed_intent={"purpose": "Refund order #8834", "max_amount": {"units": 450, "currency": "USD"}},
)


def setUpModule():
    harness.chiod()


class VoteRecordedProxy:
    """A proxy in front of the real chiod. POST /approvals/{id}/respond is
    forwarded (chiod records the vote for real) and then answered as chiod
    answers when a step after the vote's commit failed: 500 with its
    envelope {"error":"vote_recorded","message":...} (internal/httpapi/
    errors.go, kernel/vote_recorded.go). Everything else passes through.
    responds counts the respond POSTs."""

    def __init__(self, target: str):
        proxy = self
        self.responds = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _handle(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                req = urllib.request.Request(target + self.path, data=body, method=self.command)
                for k in ("Content-Type", "Accept", "Authorization", "Chio-Proof"):
                    if self.headers.get(k):
                        req.add_header(k, self.headers[k])
                try:
                    with urllib.request.urlopen(req, timeout=60) as r:
                        status, data = r.status, r.read()
                except urllib.error.HTTPError as e:
                    status, data = e.code, e.read()
                if self.command == "POST" and self.path.endswith("/respond"):
                    proxy.responds += 1
                    if status == 200:
                        aid = self.path.split("/")[2]
                        msg = (
                            f"your vote on {aid} is recorded and approved it, but the approved call is not finished yet "
                            "(chio finishes it once its store recovers; do not vote again): store unavailable: the store went down"
                        )
                        status, data = 500, (json.dumps({"error": "vote_recorded", "message": msg}) + "\n").encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _handle

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


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
        proxy = VoteRecordedProxy(harness.chiod().url)
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
        proxy = VoteRecordedProxy(harness.chiod().url)
        self.addCleanup(proxy.close)
        agent_via_proxy = Client(proxy.url, key_file=agent.key_file, capability_file=agent.capability_file)
        done = await agent_via_proxy.resume_with_approval(approval_token=token, timeout=30)
        self.assertIsInstance(done, chio.Allowed)
        self.assertEqual(proxy.responds, 1, "the recorded vote's token was presented again")


if __name__ == "__main__":
    unittest.main()
