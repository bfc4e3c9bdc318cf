"""chiod's call state names a tool's failure in string members: tool_error
and execution ("tool_error", "not_delivered", "unknown"). An answer whose
member has another type (a number, an object, false: a newer or broken
chiod, a proxy's rewritten JSON) cannot be read. The Go SDK's typed decode
refuses it (errBadAnswer: OutcomeUnknown for a call); results.from_state
read such a member as "chiod did not say" and reported the call as an
Allowed that did not fail, whose output the agent would use: a failure (or
an outcome unknown) read as success."""

import http.server
import json
import threading
import unittest

import chio
from chio import Client, PrivateKey

BAD_ANSWERS = {
    "execution a number": {"status": "allowed", "request_id": "req-t", "execution": 3, "output": {"ok": True}},
    "execution an object": {"status": "allowed", "request_id": "req-t", "execution": {"state": "unknown"}},
    "execution false": {"status": "allowed", "request_id": "req-t", "execution": False},
    "tool_error 0": {"status": "allowed", "request_id": "req-t", "tool_error": 0},
    "tool_error false": {"status": "allowed", "request_id": "req-t", "tool_error": False},
    "tool_error an empty list": {"status": "allowed", "request_id": "req-t", "tool_error": []},
}


def answering(test: unittest.TestCase, body: bytes) -> str:
    """A loopback server answering every request with 200 and body."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _answer(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    test.addCleanup(srv.server_close)
    test.addCleanup(srv.shutdown)
    return f"http://127.0.0.1:{srv.server_address[1]}"


def agent_client(url: str) -> Client:
    key = PrivateKey.from_seed(bytes(32))
    return Client(url, key=key, capability=json.dumps({"id": "cap-t", "subject": key.public_key}))


async def call_tool_is_outcome_unknown(test: unittest.IsolatedAsyncioTestCase, answers: dict) -> None:
    """call_tool of req-t answered each of answers (name → call state)
    raises OutcomeUnknown naming req-t: never a result, nor another error."""
    for name, state in answers.items():
        with test.subTest(name):
            c = agent_client(answering(test, json.dumps(state).encode()))
            try:
                r = await c.call_tool("pay", "issue_refund", {"amount": 450}, request_id="req-t")
            except chio.OutcomeUnknown as e:
                test.assertEqual(e.request_id, "req-t")
                continue
            except chio.ChioError as e:
                test.fail(f"{state}: {type(e).__name__} {e}, want OutcomeUnknown")
            test.fail(f"call req-t answered with {state}: returned {r!r} (failed={getattr(r, 'failed', None)}), want OutcomeUnknown")


async def reads_refuse(test: unittest.IsolatedAsyncioTestCase, answers: dict) -> None:
    """status and await_approval of req-t answered each of answers raise a
    ChioError at once (not TimedOut): never a result."""
    for name, state in answers.items():
        with test.subTest(name):
            c = agent_client(answering(test, json.dumps(state).encode()))
            for op in (lambda: c.status("req-t"), lambda: c.await_approval("req-t", timeout=5)):
                try:
                    r = await op()
                except chio.TimedOut as e:
                    test.fail(f"{state}: timed out instead of refusing the answer: {e}")
                except chio.ChioError:
                    continue
                test.fail(f"read of req-t answered with {state}: returned {r!r}, want an error")


class AnswerFieldTypes(unittest.IsolatedAsyncioTestCase):
    async def test_call_answer_with_a_mistyped_failure_member_is_outcome_unknown(self):
        await call_tool_is_outcome_unknown(self, BAD_ANSWERS)

    async def test_await_and_status_refuse_a_mistyped_failure_member(self):
        await reads_refuse(self, BAD_ANSWERS)

    async def test_well_typed_answers_still_read(self):
        for state, failed in (
            ({"status": "allowed", "request_id": "req-t", "output": {"ok": True}}, False),
            ({"status": "allowed", "request_id": "req-t", "execution": "succeeded", "tool_error": None}, False),
            ({"status": "allowed", "request_id": "req-t", "execution": "unknown", "tool_error": "timed out"}, True),
        ):
            with self.subTest(state=state):
                c = agent_client(answering(self, json.dumps(state).encode()))
                r = await c.call_tool("pay", "issue_refund", {"amount": 450}, request_id="req-t")
                self.assertIsInstance(r, chio.Allowed)
                self.assertEqual(r.failed, failed)


if __name__ == "__main__":
    unittest.main()
