"""await_approval long-polls: each GET asks chiod to hold the answer until
the call changes or the wait passes. An answer that comes back at once with
the call still pending (a proxy or cache that drops or ignores ?wait=, a
chiod answering while it shuts down) was followed by the next poll at once:
await_approval polled in a tight loop, thousands of signed requests a
second, for as long as it waited (forever without a timeout). A poll
answered early must be followed by a pause (the reconnect backoff), as a
failed one is."""

import http.server
import threading
import unittest

import chio

from .test_answer_field_types import agent_client

PENDING = b'{"status":"pending_approval","request_id":"req-p","approval_request_id":"ar-p","deadline":4102444800}'


class EarlyPending(unittest.IsolatedAsyncioTestCase):
    async def test_pending_answered_at_once_is_not_polled_in_a_tight_loop(self):
        gets = 0
        lock = threading.Lock()

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                nonlocal gets
                with lock:
                    gets += 1
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(PENDING)))
                self.end_headers()
                self.wfile.write(PENDING)

        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        c = agent_client(f"http://127.0.0.1:{srv.server_address[1]}")
        with self.assertRaises(chio.TimedOut):
            await c.await_approval("req-p", timeout=3)
        # With the backoff (0.25 s doubling) 3 s hold at most 5 polls;
        # without it, one poll per round trip.
        with lock:
            self.assertLessEqual(gets, 10, f"{gets} polls in 3 s, each answered at once with the call pending")


if __name__ == "__main__":
    unittest.main()
