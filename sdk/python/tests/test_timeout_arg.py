"""A timeout is a number of seconds. call_tool refuses anything else as
BadRequest before sending; await_approval, resume_with_approval, confirm
and ask took whatever came: a NaN (a computed budget gone wrong) compared
false with every bound, so await_approval waited forever, polling, as if
no timeout had been given; a string raised TypeError from the arithmetic.
They refuse them as BadRequest too, nothing sent. (A negative timeout has
already passed: TimedOut, as before.)"""

import asyncio
import http.server
import threading
import unittest

import chio

from .test_answer_field_types import agent_client

PENDING = b'{"status":"pending_approval","request_id":"req-p","approval_request_id":"ar-p","deadline":4102444800}'


class TimeoutArgument(unittest.IsolatedAsyncioTestCase):
    def setUp(self):
        self.paths: list[str] = []
        paths = self.paths

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self):
                paths.append(self.path)
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(202 if self.command == "POST" else 200)
                self.send_header("Content-Length", str(len(PENDING)))
                self.end_headers()
                self.wfile.write(PENDING)

            do_GET = do_POST = _answer

        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        self.client = agent_client(f"http://127.0.0.1:{srv.server_address[1]}")

    async def test_a_timeout_that_is_not_a_number_is_a_bad_request(self):
        c = self.client
        token = '{"request_id":"ar-p"}'
        for timeout in (float("nan"), "5", True):
            for name, op in {
                "await_approval": lambda: c.await_approval("req-p", timeout=timeout),
                "resume_with_approval": lambda: c.resume_with_approval(token, timeout=timeout),
                "confirm": lambda: c.confirm("Deploy?", request_id="req-p", timeout=timeout),
                "ask": lambda: c.ask("Which?", [{"id": "q", "text": "?", "type": "text"}], request_id="req-p", timeout=timeout),
                "call_tool": lambda: c.call_tool("pay", "issue_refund", {}, request_id="req-p", timeout=timeout),
            }.items():
                with self.subTest(op=name, timeout=timeout):
                    self.paths.clear()
                    try:
                        # The bound only keeps a hang from holding up the run.
                        r = await asyncio.wait_for(op(), 10)
                    except chio.BadRequest:
                        self.assertEqual(self.paths, [], "sent before the timeout was refused")
                        continue
                    except TimeoutError:
                        self.fail(f"{name}(timeout={timeout!r}) still waiting after 10 s ({len(self.paths)} requests)")
                    except Exception as e:
                        self.fail(f"{name}(timeout={timeout!r}): {type(e).__name__}: {e}, want BadRequest")
                    self.fail(f"{name}(timeout={timeout!r}) returned {r!r}, want BadRequest")


if __name__ == "__main__":
    unittest.main()
