"""An answer to GET /v1/calls/{id} with a status chiod never sends (a newer
chiod, a proxy's rewritten or empty JSON) is neither final nor pending.
await_approval must fail at once with a clear error, as status() does
(results.from_state), not poll again in a tight loop until the timeout
(forever without one). The Go SDK's TestAwaitUnknownStatusFailsAtOnce is
the same test."""

import http.server
import json
import threading
import time
import unittest

import chio
from chio import Client


class FixedAnswer:
    def __init__(self, body: bytes):
        srv = self
        self.gets = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):  # a call chiod allowed and is still running
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                data = b'{"status":"dispatching","request_id":"req-x"}'
                self.send_response(202)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                srv.gets += 1
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class AwaitUnknownStatus(unittest.IsolatedAsyncioTestCase):
    async def test_unknown_status_fails_at_once(self):
        for body in (b'{"status":"paused","request_id":"req-x"}', b"{}"):
            with self.subTest(body=body):
                srv = FixedAnswer(body)
                self.addCleanup(srv.close)
                c = Client(srv.url, bearer="reader-token")
                start = time.monotonic()
                with self.assertRaises(chio.ChioError) as cm:
                    await c.await_approval("req-x", timeout=2)
                took = time.monotonic() - start
                self.assertNotIsInstance(cm.exception, chio.TimedOut, f"polled {srv.gets} times for {took:.1f}s")
                self.assertLessEqual(srv.gets, 1)
                self.assertIn("status", str(cm.exception))

    async def test_call_tool_waiting_out_a_running_call_reports_outcome_unknown(self):
        """call_tool met a call chiod allowed and is running, and its wait
        for the outcome failed: the call may have run. OutcomeUnknown
        naming the request id, as the Go SDK's CallTool
        (TestDispatchingCallOutlivingTheContextIsOutcomeUnknown)."""
        from chio.keys import PrivateKey

        key = PrivateKey.from_seed(bytes(32))
        cap = json.dumps({"id": "cap-x", "subject": key.public_key}).encode()
        srv = FixedAnswer(b'{"status":"paused","request_id":"req-x"}')
        self.addCleanup(srv.close)
        c = Client(srv.url, key=key, capability=cap)
        with self.assertRaises(chio.ChioError) as cm:
            await c.call_tool("demo", "echo", {}, request_id="req-x")
        self.assertIsInstance(cm.exception, chio.OutcomeUnknown, repr(cm.exception))
        self.assertEqual(cm.exception.request_id, "req-x")


if __name__ == "__main__":
    unittest.main()
