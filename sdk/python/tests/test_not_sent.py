"""A chiod that is not running (or a wrong URL) refuses the connection: not
a byte of the call was written, so it did not run. call_tool raised that as
OutcomeUnknown ("it may have run"), which makes a chiod that is simply down
look like a payment that may have been made. It is NotSent (an
Unavailable: nothing was allowed), naming the request id. Once any attempt
connected and lost its answer, the call may have run, whatever the later
attempts met: still OutcomeUnknown."""

import http.client
import json
import socket
import threading
import unittest

import chio
from chio import Client, PrivateKey


def closed_port() -> int:
    """A port nothing listens on any more."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def client_at(url: str) -> Client:
    key = PrivateKey.from_seed(bytes(32))
    cap = json.dumps({"id": "cap-1", "subject": key.public_key})
    return Client(url, key=key, capability=cap)


class NotSent(unittest.IsolatedAsyncioTestCase):
    async def test_refused_every_time_is_not_sent(self):
        client = client_at(f"http://127.0.0.1:{closed_port()}")
        with self.assertRaises(chio.ChioError) as cm:
            await client.call_tool("pay", "issue_refund", {"amount": 450}, request_id="req-down")
        e = cm.exception
        self.assertNotIsInstance(e, chio.OutcomeUnknown, f"a call never sent reads as outcome unknown: {e!r}")
        self.assertIsInstance(e, chio.NotSent)
        self.assertIsInstance(e, chio.Unavailable)
        self.assertEqual(e.request_id, "req-down")
        self.assertIn("req-down", str(e))
        self.assertIn("not sent", str(e))

    async def test_lost_answer_then_refused_is_outcome_unknown(self):
        ln = socket.socket()
        ln.bind(("127.0.0.1", 0))
        ln.listen(1)
        port = ln.getsockname()[1]
        got: list[bytes] = []

        def serve():
            conn, _ = ln.accept()
            ln.close()  # every later attempt is refused
            with conn:
                f = conn.makefile("rb")
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    line = f.readline()
                    if not line:
                        break
                    head += line
                got.append(head)
                f.close()
            # closed without an answer: the call may have run

        t = threading.Thread(target=serve, daemon=True)
        t.start()
        client = client_at(f"http://127.0.0.1:{port}")
        with self.assertRaises(chio.ChioError) as cm:
            await client.call_tool("pay", "issue_refund", {"amount": 450}, request_id="req-lost")
        t.join()
        self.assertTrue(got and got[0].startswith(b"POST /v1/calls"), "the first attempt did not reach the server")
        e = cm.exception
        self.assertIsInstance(e, chio.OutcomeUnknown)
        self.assertNotIsInstance(e, chio.Unavailable)
        self.assertEqual(e.request_id, "req-lost")

    async def test_tls_handshake_cut_is_outcome_unknown(self):
        # The TCP connection is made, then closed during the TLS handshake:
        # a connection was made, so it is never NotSent.
        ln = socket.socket()
        ln.bind(("127.0.0.1", 0))
        ln.listen(8)
        self.addCleanup(ln.close)
        port = ln.getsockname()[1]

        def serve():
            while True:
                try:
                    conn, _ = ln.accept()
                except OSError:
                    return
                conn.close()

        threading.Thread(target=serve, daemon=True).start()
        client = client_at(f"https://127.0.0.1:{port}")
        with self.assertRaises(chio.ChioError) as cm:
            await client.call_tool("pay", "issue_refund", {"amount": 450}, request_id="req-tls")
        self.assertIsInstance(cm.exception, chio.OutcomeUnknown)
        self.assertNotIsInstance(cm.exception, chio.NotSent)
        self.assertEqual(cm.exception.request_id, "req-tls")


if __name__ == "__main__":
    unittest.main()
