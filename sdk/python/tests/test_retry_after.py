"""chiod turns a request away with 429 and Retry-After (a long-poll over
the credential's share; a gateway's rate limit): the SDK asks again no
sooner than it says, instead of its own 250 ms backoff, and when the
deadline is nearer than that, raises the refusal at once. The Go SDK's
retry_after_test.go is the same test."""

import email.utils
import http.server
import json
import threading
import time
import unittest

import chio
from chio import Client
from chio.errors import parse_retry_after
from chio.keys import PrivateKey

REFUSED = b'{"error":"unavailable","message":"this credential already holds 8 concurrent waits, the most it may; retry later"}'
ALLOWED = b'{"status":"allowed","request_id":"req-x","receipt_id":"rc-1","output":{"ok":true}}'


class Scripted:
    """Answers each request with the next (status, Retry-After, body) in
    line (the last one repeats) and records when each arrived."""

    def __init__(self, script):
        srv = self
        self.arrived: list[float] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def answer(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                srv.arrived.append(time.monotonic())
                status, retry_after, body = script[min(len(srv.arrived), len(script)) - 1]
                self.send_response(status)
                if retry_after is not None:
                    self.send_header("Retry-After", retry_after)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = answer

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def agent_client(url: str) -> Client:
    key = PrivateKey.from_seed(bytes(32))
    return Client(url, key=key, capability=json.dumps({"id": "cap-x", "subject": key.public_key}))


class RetryAfter(unittest.IsolatedAsyncioTestCase):
    def serve(self, script) -> Scripted:
        srv = Scripted(script)
        self.addCleanup(srv.close)
        return srv

    async def test_await_asks_again_no_sooner_than_retry_after(self):
        srv = self.serve([(429, "1", REFUSED), (200, None, ALLOWED)])
        res = await agent_client(srv.url).await_approval("req-x", timeout=10)
        self.assertIsInstance(res, chio.Allowed)
        self.assertEqual(len(srv.arrived), 2)
        self.assertGreaterEqual(srv.arrived[1] - srv.arrived[0], 1.0, "asked again before Retry-After: 1")

    async def test_call_tool_asks_again_no_sooner_than_retry_after(self):
        srv = self.serve([(429, "1", REFUSED), (200, None, ALLOWED)])
        res = await agent_client(srv.url).call_tool("demo", "echo", {}, request_id="req-x")
        self.assertIsInstance(res, chio.Allowed)
        self.assertEqual(len(srv.arrived), 2)
        self.assertGreaterEqual(srv.arrived[1] - srv.arrived[0], 1.0, "sent again before Retry-After: 1")

    async def test_retry_after_beyond_the_deadline_ends_at_once(self):
        for what in ("await", "call"):
            with self.subTest(what=what):
                srv = self.serve([(429, "30", REFUSED)])
                c = agent_client(srv.url)
                start = time.monotonic()
                with self.assertRaises(chio.ChioError) as cm:
                    if what == "await":
                        await c.await_approval("req-x", timeout=5)
                    else:
                        await c.call_tool("demo", "echo", {}, request_id="req-x", timeout=5)
                took = time.monotonic() - start
                self.assertLess(took, 2.0, f"waited {took:.1f}s")
                self.assertEqual(len(srv.arrived), 1)
                self.assertIsInstance(cm.exception, chio.Unavailable, repr(cm.exception))
                self.assertEqual(cm.exception.retry_after, 30.0)

    async def test_retry_after_as_an_http_date_is_honoured(self):
        # RFC 9110 allows Retry-After as an HTTP-date, which a proxy or load
        # balancer in front of chiod may send: it asks for the same wait as
        # the seconds until that date, never none.
        srv = self.serve([(429, email.utils.formatdate(time.time() + 30, usegmt=True), REFUSED)])
        with self.assertRaises(chio.ChioError) as cm:
            await agent_client(srv.url).call_tool("demo", "echo", {}, request_id="req-x", timeout=5)
        self.assertEqual(len(srv.arrived), 1, "asked again in spite of a Retry-After 30 s away")
        self.assertIsInstance(cm.exception, chio.Unavailable, repr(cm.exception))
        self.assertTrue(20.0 < cm.exception.retry_after <= 30.0, cm.exception.retry_after)

    def test_parse_retry_after(self):
        for value, want in {
            None: 0.0, "": 0.0, "0": 0.0, "1": 1.0, " 7 ": 7.0, "3600": 3600.0, "86400": 3600.0,
            "18446744074": 3600.0, "99999999999999999999999": 3600.0, "-1": 0.0, "1.5": 0.0, "soon": 0.0,
            "Wed, 21 Oct 2015 07:28:00 GMT": 0.0, "+5": 0.0, "\u0661": 0.0,
            # HTTP-dates (IMF-fixdate, RFC 850, asctime): a date past is 0,
            # one more than an hour away is capped; a date in no HTTP-date
            # form is 0.
            "Sunday, 06-Nov-94 08:49:37 GMT": 0.0, "Sun Nov  6 08:49:37 1994": 0.0,
            "Fri, 31 Dec 9999 23:59:59 GMT": 3600.0, "Friday, 31-Dec-99 23:59:59 GMT": 0.0, "Fri Dec 31 23:59:59 9999": 3600.0,
            "Fri, 31 Dec 9999 23:59:59 PST": 0.0, "9999-12-31T23:59:59Z": 0.0, "Fri, 31 Dec 9999": 0.0,
        }.items():
            self.assertEqual(parse_retry_after(value), want, repr(value))


if __name__ == "__main__":
    unittest.main()
