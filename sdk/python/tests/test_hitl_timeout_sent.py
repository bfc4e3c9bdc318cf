"""confirm's and ask's timeout passing before chiod answered the call is
TimedOut, and it says whether the call was sent, as TypeScript's
"timed_out" does with its cause: ``__cause__`` is NotSent (no attempt's
connection was ready: the question was never put, asking again is safe)
or OutcomeUnknown (an attempt reached chiod: the question may be waiting
for a human), and ``request_id`` names the call either way."""

import socket
import threading
import unittest

import chio

from .test_not_sent import client_at, closed_port
from .test_not_sent_deadline import LINUX, stalled_listener, url_of


def silent_server(test: unittest.TestCase) -> str:
    """An http URL whose server reads every request and never answers."""
    ln = socket.socket()
    ln.bind(("127.0.0.1", 0))
    ln.listen(8)
    test.addCleanup(ln.close)
    held: list[socket.socket] = []
    test.addCleanup(lambda: [c.close() for c in held])

    def serve():
        while True:
            try:
                held.append(ln.accept()[0])  # held open, silent
            except OSError:
                return

    threading.Thread(target=serve, daemon=True).start()
    return url_of(ln)


class HITLTimeout(unittest.IsolatedAsyncioTestCase):
    @unittest.skipUnless(LINUX, "a full backlog drops SYNs on Linux")
    async def test_confirm_timeout_while_connecting_says_not_sent(self):
        ln, _ = stalled_listener(self)
        client = client_at(url_of(ln))
        with self.assertRaises(chio.TimedOut) as cm:
            await client.confirm("Deploy?", request_id="req-confirm-unsent", timeout=0.3)
        e = cm.exception
        self.assertIsInstance(e.__cause__, chio.NotSent, f"TimedOut does not say the call was not sent: {e!r}")
        self.assertEqual(e.request_id, "req-confirm-unsent")
        self.assertIn("not sent", str(e))

    @unittest.skipUnless(LINUX, "a full backlog drops SYNs on Linux")
    async def test_ask_timeout_while_connecting_says_not_sent(self):
        ln, _ = stalled_listener(self)
        client = client_at(url_of(ln))
        with self.assertRaises(chio.TimedOut) as cm:
            await client.ask("Which region?", [{"id": "r", "text": "Region", "type": "text"}],
                             request_id="req-ask-unsent", timeout=0.3)
        self.assertIsInstance(cm.exception.__cause__, chio.NotSent, repr(cm.exception))
        self.assertEqual(cm.exception.request_id, "req-ask-unsent")

    async def test_confirm_timeout_after_sending_says_it_may_be_pending(self):
        client = client_at(silent_server(self))
        with self.assertRaises(chio.TimedOut) as cm:
            await client.confirm("Deploy?", request_id="req-confirm-sent", timeout=0.3)
        e = cm.exception
        self.assertIsInstance(e.__cause__, chio.OutcomeUnknown, f"TimedOut does not say the call may have been sent: {e!r}")
        self.assertNotIsInstance(e.__cause__, chio.NotSent)
        self.assertEqual(e.request_id, "req-confirm-sent")

    async def test_confirm_timeout_after_refusals_says_not_sent(self):
        # The refusals come at once; the backoffs outlast the timeout.
        client = client_at(f"http://127.0.0.1:{closed_port()}")
        with self.assertRaises(chio.TimedOut) as cm:
            await client.confirm("Deploy?", request_id="req-confirm-refused", timeout=0.4)
        self.assertIsInstance(cm.exception.__cause__, chio.NotSent, repr(cm.exception))
        self.assertEqual(cm.exception.request_id, "req-confirm-refused")

if __name__ == "__main__":
    unittest.main()
