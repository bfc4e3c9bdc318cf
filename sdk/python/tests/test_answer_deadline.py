"""A pending call's deadline is unix seconds from chiod. One that no
datetime can hold (beyond year 9999, or past time_t: a broken or hostile
answer) made datetime.fromtimestamp raise OverflowError or ValueError out
of call_tool: an exception that is no ChioError, naming no request id
(lost when the SDK chose it), for a call that reached chiod. The Go SDK
reads a deadline beyond int64 as an unreadable answer (OutcomeUnknown with
the request id); so must this one. The deadline read back from the
approval request after a replayed answer is best effort: one out of range
leaves it unknown, as a failed read does."""

import http.server
import json
import threading
import unittest

import chio

from .test_answer_field_types import agent_client


def fake_chiod(test: unittest.TestCase, post: dict, approval: dict | None = None) -> str:
    """POST /v1/calls answers 202 and post; GET /approvals/… 200 and approval."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _answer(self, status: int, body: dict):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self._answer(202, post)

        def do_GET(self):
            if approval is None:
                self._answer(404, {"error": "not_found", "message": "no"})
            else:
                self._answer(200, approval)

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    test.addCleanup(srv.server_close)
    test.addCleanup(srv.shutdown)
    return f"http://127.0.0.1:{srv.server_address[1]}"


class AnswerDeadline(unittest.IsolatedAsyncioTestCase):
    async def test_a_deadline_no_datetime_holds_is_an_unreadable_answer(self):
        for deadline in (10**20, 10**15, 253402300800):
            with self.subTest(deadline=deadline):
                post = {"status": "pending_approval", "request_id": "req-t", "approval_request_id": "ar-1", "deadline": deadline}
                c = agent_client(fake_chiod(self, post))
                try:
                    r = await c.call_tool("pay", "issue_refund", {"amount": 450}, request_id="req-t")
                except chio.OutcomeUnknown as e:
                    self.assertEqual(e.request_id, "req-t")
                    continue
                except Exception as e:  # what the test is about: not a ChioError
                    self.fail(f"deadline {deadline}: {type(e).__name__}: {e}, want OutcomeUnknown naming req-t")
                self.fail(f"deadline {deadline}: returned {r!r}, want OutcomeUnknown")

    async def test_an_approvals_expiry_out_of_range_leaves_the_deadline_unknown(self):
        post = {"status": "pending_approval", "request_id": "req-t", "approval_request_id": "ar-1"}
        approval = {"request": {"approval_id": "ar-1", "request_id": "req-t", "expires_at": 10**20}}
        c = agent_client(fake_chiod(self, post, approval))
        r = await c.call_tool("pay", "issue_refund", {"amount": 450}, request_id="req-t")
        self.assertIsInstance(r, chio.PendingApproval)
        self.assertEqual((r.approval_request_id, r.deadline), ("ar-1", None))


if __name__ == "__main__":
    unittest.main()
