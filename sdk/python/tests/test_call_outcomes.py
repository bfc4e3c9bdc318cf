"""testdata/sdk/call_outcomes.json, shared with the Go and TypeScript SDKs'
tests: what call_tool reports when every attempt meets the same answer or
transport failure, served by a real loopback listener."""

import asyncio
import json
import os
import socket
import threading
import unittest
from http.client import responses

import chio

from .test_not_sent import client_at, closed_port

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
CASES = json.load(open(os.path.join(ROOT, "testdata", "sdk", "call_outcomes.json"), encoding="utf-8"))["cases"]


def outcome_of(e: BaseException) -> str:
    for cls, name in (
        (chio.NotSent, "not_sent"),  # before Unavailable, which it is
        (chio.OutcomeUnknown, "outcome_unknown"),
        (chio.Unavailable, "unavailable"),
        (chio.BadRequest, "bad_request"),
        (chio.Unauthorized, "unauthorized"),
        (chio.Conflict, "conflict"),
    ):
        if isinstance(e, cls):
            return name
    return "other"


def read_request(conn: socket.socket) -> bool:
    """Read one whole request (head and Content-Length body)."""
    f = conn.makefile("rb")
    length = 0
    while True:
        line = f.readline()
        if not line:
            return False
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode("latin-1").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    return len(f.read(length)) == length


class CallOutcomes(unittest.IsolatedAsyncioTestCase):
    async def run_case(self, case: dict) -> None:
        requests = 0
        lock = threading.Lock()
        if case.get("refused"):
            port = closed_port()
        else:
            ln = socket.socket()
            ln.bind(("127.0.0.1", 0))
            ln.listen(8)
            self.addCleanup(ln.close)
            port = ln.getsockname()[1]
            answer = None
            if "answer" in case:
                a = case["answer"]
                body = bytes.fromhex(a["body_hex"]) if "body_hex" in a else a["body"].encode()
                head = f"HTTP/1.1 {a['status']} {responses.get(a['status'], '')}\r\nConnection: close\r\nContent-Length: {len(body)}\r\n"
                head += "".join(f"{k}: {v}\r\n" for k, v in sorted(a.get("headers", {}).items()))
                answer = head.encode() + b"\r\n" + body

            def serve():
                nonlocal requests
                while True:
                    try:
                        conn, _ = ln.accept()
                    except OSError:
                        return
                    with conn:
                        if not read_request(conn):
                            continue
                        with lock:
                            requests += 1
                        if answer is not None:
                            conn.sendall(answer)

            threading.Thread(target=serve, daemon=True).start()
        client = client_at(f"http://127.0.0.1:{port}")
        try:
            res = await client.call_tool("pay", "issue_refund", {"amount": 450}, request_id="req-outcome")
        except chio.ChioError as e:
            self.assertEqual(outcome_of(e), case["outcome"], repr(e))
        else:
            self.assertEqual("succeeded" if isinstance(res, chio.Allowed) and not res.failed else "other", case["outcome"], repr(res))
            # The tool's output, equal to its text as this SDK parses JSON.
            self.assertEqual(res.output, json.loads(case["output"]))
        with lock:
            self.assertEqual(requests, case["attempts"], "requests that reached the listener")

    async def test_cases(self):
        async def one(case):
            with self.subTest(case["name"]):
                await self.run_case(case)

        await asyncio.gather(*(one(c) for c in CASES))


if __name__ == "__main__":
    unittest.main()
