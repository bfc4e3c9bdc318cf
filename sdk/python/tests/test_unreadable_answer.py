"""A complete answer to POST /v1/calls that the SDK cannot read (a proxy or
WAF that replaced chiod's body with its own page, or an answer over the
size limit, or JSON naming no status chiod sends) comes after chiod decided
and ran the call. call_tool must raise OutcomeUnknown naming the request
id ("it may have run: retry with the same request_id or await it"), as the Go SDK does
(TestUnreadableCallAnswerIsOutcomeUnknown), not a plain ChioError an agent
would read as "the call failed" and resubmit under a new id."""

import http.server
import threading
import time
import unittest

import chio
from chio import Allowed, Client, _http

from . import harness


class RewritingProxy:
    """Forwards everything to chiod; the body of each POST /v1/calls answer
    is replaced by rewrite(original)."""

    def __init__(self, target: str, rewrite):
        proxy = self
        self.ids: list[str] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _handle(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                status, data = harness.forward(target, self, body)
                if self.command == "POST" and self.path == "/v1/calls":
                    proxy.ids.append(self.headers.get("Idempotency-Key"))
                    data = rewrite(data)
                self.send_response(status)
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


def setUpModule():
    harness.chiod()


class UnreadableAnswer(unittest.IsolatedAsyncioTestCase):
    async def test_unreadable_call_answer_is_outcome_unknown(self):
        rewrites = {
            "not JSON": lambda data: b"<html><body>OK</body></html>",
            "unknown status": lambda data: b'{"status":"paused"}',
            "empty object": lambda data: b"{}",
            "too large": lambda data: data.strip() + b" " * (_http.MAX_RESPONSE_BYTES + 1),
        }
        agent = await harness.agent("echo")
        direct = Client(harness.chiod().url, key_file=agent.key_file, capability_file=agent.capability_file)
        for name, rewrite in rewrites.items():
            with self.subTest(name):
                proxy = RewritingProxy(harness.chiod().url, rewrite)
                self.addCleanup(proxy.close)
                c = Client(proxy.url, key_file=agent.key_file, capability_file=agent.capability_file)
                rid = f"unreadable-{time.time_ns()}"
                with self.assertRaises(chio.ChioError) as cm:
                    await c.call_tool("demo", "echo", {"msg": "pay once, " + name}, request_id=rid)
                self.assertEqual(proxy.ids, [rid])
                ran = await direct.status(rid)
                self.assertIsInstance(ran, Allowed, "the call did not run at chiod")
                self.assertFalse(ran.failed)
                e = cm.exception
                self.assertIsInstance(e, chio.OutcomeUnknown, f"call {rid} ran, yet call_tool raised {type(e).__name__}: {e}")
                self.assertEqual(e.request_id, rid)


if __name__ == "__main__":
    unittest.main()
