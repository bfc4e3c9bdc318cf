"""Deadlines, cancellation and the connect timeout against listeners that
never let a request through: nothing of the call was written, so it did
not run, and call_tool must say so (NotSent), never OutcomeUnknown ("it
may have run"). An attempt the caller gave up before its connection was
ready must not be sent afterwards by the thread still connecting.

stalled_listener() is a loopback listener whose TCP connects do not
complete: backlog 0, never accepting, its accept queue filled first, so
Linux drops every further SYN (the client retransmits it) until the test
accepts. The tests that need it run on Linux only."""

import asyncio
import json
import socket
import sys
import threading
import unittest

import chio
from chio import Client, PrivateKey

from .test_not_sent import client_at, closed_port

LINUX = sys.platform.startswith("linux")


def stalled_listener(test: unittest.TestCase) -> tuple[socket.socket, list[socket.socket]]:
    """(listener, the connections filling its queue), closed at cleanup."""
    ln = socket.socket()
    ln.bind(("127.0.0.1", 0))
    ln.listen(0)
    test.addCleanup(ln.close)
    fillers: list[socket.socket] = []
    while True:
        s = socket.socket()
        s.settimeout(0.3)
        try:
            s.connect(ln.getsockname())
        except OSError:
            s.close()
            break
        fillers.append(s)
        test.addCleanup(s.close)
        if len(fillers) > 64:
            test.fail("the listener's backlog never filled")
    return ln, fillers


def url_of(ln: socket.socket, scheme: str = "http") -> str:
    return f"{scheme}://127.0.0.1:{ln.getsockname()[1]}"


class Deadline(unittest.IsolatedAsyncioTestCase):
    async def test_timeout_after_refused_attempts_is_not_sent(self):
        # Refusals come at once; the backoffs (0.25 s, 0.5 s, 1 s) outlast it.
        client = client_at(f"http://127.0.0.1:{closed_port()}")
        with self.assertRaises(chio.ChioError) as cm:
            await client.call_tool("pay", "issue_refund", {"amount": 450}, request_id="req-refused-timeout", timeout=0.4)
        e = cm.exception
        self.assertNotIsInstance(e, chio.OutcomeUnknown, f"a call never sent reads as outcome unknown: {e!r}")
        self.assertIsInstance(e, chio.NotSent)
        self.assertEqual(e.request_id, "req-refused-timeout")

    @unittest.skipUnless(LINUX, "a full backlog drops SYNs on Linux")
    async def test_timeout_during_connect_is_not_sent(self):
        ln, _ = stalled_listener(self)
        client = client_at(url_of(ln))
        with self.assertRaises(chio.ChioError) as cm:
            await client.call_tool("pay", "issue_refund", {"amount": 450}, request_id="req-connect-timeout", timeout=0.3)
        e = cm.exception
        self.assertNotIsInstance(e, chio.OutcomeUnknown, f"a call never sent reads as outcome unknown: {e!r}")
        self.assertIsInstance(e, chio.NotSent)
        self.assertEqual(e.request_id, "req-connect-timeout")

    @unittest.skipUnless(LINUX, "a full backlog drops SYNs on Linux")
    async def test_cancelled_before_connecting_is_never_sent_later(self):
        # The caller gives the call up (asyncio's own timeout) while its
        # connect is pending; then the listener lets connections through.
        # The thread still connecting must not send the call afterwards.
        ln, fillers = stalled_listener(self)
        client = client_at(url_of(ln))
        with self.assertRaises(TimeoutError):
            await asyncio.wait_for(client.call_tool("pay", "issue_refund", {"amount": 450}, request_id="req-cancelled"), 0.3)

        def next_from_the_sdk() -> bytes:
            for _ in fillers:  # the queue holds these first
                ln.accept()[0].close()
            ln.settimeout(30)  # the SDK's SYN is retransmitted within seconds
            conn, _ = ln.accept()
            with conn:
                conn.settimeout(30)
                return conn.recv(64)  # b"" once the SDK closes it unwritten

        first = await asyncio.to_thread(next_from_the_sdk)
        self.assertEqual(first, b"", f"the call was sent after the caller gave it up: {first!r}")

    @unittest.skipUnless(LINUX, "a full backlog drops SYNs on Linux")
    async def test_connect_timeout_is_not_sent(self):
        ln, _ = stalled_listener(self)
        key = PrivateKey.from_seed(bytes(32))
        client = Client(url_of(ln), key=key, capability=json.dumps({"id": "cap-1", "subject": key.public_key}), connect_timeout=0.15)
        loop = asyncio.get_running_loop()
        start = loop.time()
        with self.assertRaises(chio.ChioError) as cm:
            await client.call_tool("pay", "issue_refund", {"amount": 450}, request_id="req-connect-stall")
        e = cm.exception
        self.assertNotIsInstance(e, chio.OutcomeUnknown, f"a call never sent reads as outcome unknown: {e!r}")
        self.assertIsInstance(e, chio.NotSent)
        self.assertLess(loop.time() - start, 10, "the connect timeout was not applied")

    async def test_tls_handshake_stall_is_not_sent(self):
        # The server accepts and never answers the ClientHello: the
        # connection is never ready, nothing of the request was written.
        ln = socket.socket()
        ln.bind(("127.0.0.1", 0))
        ln.listen(8)
        self.addCleanup(ln.close)
        held: list[socket.socket] = []

        def serve():
            while True:
                try:
                    held.append(ln.accept()[0])  # held open, silent
                except OSError:
                    return

        threading.Thread(target=serve, daemon=True).start()
        self.addCleanup(lambda: [c.close() for c in held])
        key = PrivateKey.from_seed(bytes(32))
        client = Client(url_of(ln, "https"), key=key, capability=json.dumps({"id": "cap-1", "subject": key.public_key}), connect_timeout=0.15)
        with self.assertRaises(chio.ChioError) as cm:
            await client.call_tool("pay", "issue_refund", {"amount": 450}, request_id="req-tls-stall")
        self.assertIsInstance(cm.exception, chio.NotSent, repr(cm.exception))
        self.assertEqual(cm.exception.request_id, "req-tls-stall")

    def test_default_connect_timeout_is_the_other_sdks(self):
        self.assertEqual(chio.client.CONNECT_TIMEOUT, 10.0)


if __name__ == "__main__":
    unittest.main()
