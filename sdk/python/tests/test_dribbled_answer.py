"""Every request has a time limit (a long-poll: its wait plus POLL_MARGIN;
any other: REQUEST_TIMEOUT), so that a connection that stopped answering is
given up and a call retried under its request id, even without a timeout
from the caller. The limit was only the socket's timeout, which bounds each
read, not the request: an answer that arrives a byte at a time (a stalled
proxy, a broken middlebox trickling keep-alive bytes) never ended the
request, and call_tool or await_approval without a timeout hung for as
long as the bytes kept coming. The Go SDK bounds the whole request
(requestTimeout, a context), headers and body; so must this one: the
request ends as a TransportError once its limit passed."""

import socket
import threading
import time
import unittest
from unittest import mock

import chio
from chio import _waiting

from .test_answer_field_types import agent_client

STATE = b'{"status":"allowed","request_id":"req-d","receipt_id":"rc-1","output":{"refund":"re_1"}}'


def dribbling(test: unittest.TestCase, head_slowly: bool) -> str:
    """A loopback server whose answer (STATE, 200) comes one byte every
    0.2 s: its body, or (head_slowly) its status line and headers too.
    Served whole, it takes far longer than the patched limit."""
    ln = socket.socket()
    ln.bind(("127.0.0.1", 0))
    ln.listen(8)
    test.addCleanup(ln.close)
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(STATE)}\r\n\r\n".encode()

    def serve(conn: socket.socket) -> None:
        with conn:
            f = conn.makefile("rb")
            while f.readline() not in (b"\r\n", b"\n", b""):
                pass
            slow = head + STATE if head_slowly else STATE
            try:
                if not head_slowly:
                    conn.sendall(head)
                for i in range(len(slow)):
                    conn.sendall(slow[i : i + 1])
                    time.sleep(0.2)
            except OSError:
                return  # the client gave up

    def accept() -> None:
        while True:
            try:
                conn, _ = ln.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return f"http://127.0.0.1:{ln.getsockname()[1]}"


class DribbledAnswer(unittest.IsolatedAsyncioTestCase):
    async def test_a_read_answered_a_byte_at_a_time_ends_at_its_limit(self):
        for head_slowly in (False, True):
            with self.subTest(head_slowly=head_slowly):
                c = agent_client(dribbling(self, head_slowly))
                # status() is one GET whose limit is POLL_MARGIN (its wait is 0).
                with mock.patch.object(_waiting, "POLL_MARGIN", 1.0):
                    try:
                        r = await c.status("req-d")
                    except chio.TransportError as e:
                        self.assertIn("time limit", str(e))
                        continue
                self.fail(f"a request limited to 1 s went on until the whole answer came: {r!r}")


if __name__ == "__main__":
    unittest.main()
