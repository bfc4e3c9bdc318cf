"""A POST /v1/calls answer cut off mid-body (a proxy or load
balancer resetting the connection after the headers) is a lost answer: the
call was decided and may have run. The docs promise that a dropped
connection is re-sent with the same id and content; the Go SDK does so
(io.ReadAll -> io.ErrUnexpectedEOF -> errTransport -> retry). http.client's read(amt) returns a
short body without raising IncompleteRead, so the SDK checks the length
itself and raises TransportError, which call_tool retries with the same
request id."""

import http.server
import socket
import threading
import time
import unittest

import chio
from chio import Allowed, Client, _http

from . import harness

REFUND = dict(
    arguments={"customer_id": "cust-9012", "amount": 450, "currency": "USD"},
    governed_intent={"purpose": "Refund order #8834", "max_amount": {"units": 450, "currency": "USD"}},
)


class TruncatingProxy:
    """Forwards everything to chiod; the first POST /v1/calls answer is sent
    with its full Content-Length but only half its body, then the connection
    is closed."""

    def __init__(self, target: str):
        proxy = self
        self.bodies: list[bytes] = []
        self.truncate_next = True

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _handle(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                status, data = harness.forward(target, self, body)
                cut = False
                if self.command == "POST" and self.path == "/v1/calls":
                    proxy.bodies.append(body)
                    cut, proxy.truncate_next = proxy.truncate_next, False
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if cut:
                    self.wfile.write(data[: len(data) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
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


class TruncatedAnswer(unittest.IsolatedAsyncioTestCase):
    async def test_truncated_call_answer_is_retried_with_the_same_request_id(self):
        agent = await harness.agent("refunds-auto")
        proxy = TruncatingProxy(harness.chiod().url)
        self.addCleanup(proxy.close)
        c = Client(proxy.url, key_file=agent.key_file, capability_file=agent.capability_file)
        rid = f"trunc-{time.time_ns()}"
        try:
            r = await c.call_tool("payment-server", "issue_refund", **REFUND, request_id=rid)
        except chio.ChioError as e:
            # The refund WAS issued (chiod decided and ran it) ...
            ran = [x["request_id"] for x in harness.chiod().ledger()].count(rid)
            self.fail(
                f"a cut-off answer raised {type(e).__name__} (TransportError? {isinstance(e, chio.TransportError)}; "
                f"retried? {len(proxy.bodies) > 1}) although the tool ran {ran} time(s): {e}"
            )
        self.assertIsInstance(r, Allowed)
        self.assertEqual(len(proxy.bodies), 2)
        self.assertEqual(proxy.bodies[0], proxy.bodies[1])


class RawServer:
    """Answers one connection with raw bytes, then closes it."""

    def __init__(self, answer: bytes):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1/calls/x"

        def serve():
            conn, _ = self.sock.accept()
            with conn:
                conn.recv(65536)
                conn.sendall(answer)

        threading.Thread(target=serve, daemon=True).start()

    def close(self):
        self.sock.close()


class ShortBody(unittest.TestCase):
    def _get(self, answer: bytes):
        srv = RawServer(answer)
        self.addCleanup(srv.close)
        return _http.request("GET", srv.url, None, {}, 10)

    def test_body_shorter_than_content_length_is_a_transport_error(self):
        for status in (b"200 OK", b"403 Forbidden", b"503 Service Unavailable"):
            with self.subTest(status=status), self.assertRaises(chio.TransportError):
                self._get(b"HTTP/1.1 " + status + b'\r\nContent-Length: 40\r\n\r\n{"status":"allowed"')

    def test_cut_chunked_body_is_a_transport_error(self):
        with self.assertRaises(chio.TransportError):
            self._get(b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n28\r\n{"status":"allowed"')

    def test_complete_body_is_read(self):
        body = b'{"status":"allowed"}'
        got = self._get(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        self.assertEqual(got, (200, body))


if __name__ == "__main__":
    unittest.main()
