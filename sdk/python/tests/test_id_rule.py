"""await_approval, status, cancel, approval, respond and
resume_with_approval take an id from the caller (often read back from a
file or another process's output). An id outside chiod's rule (1..128
characters of [A-Za-z0-9._:-], not "." or "..") is a bad request, said
before anything is sent, as call_tool does for a request id and as the Go
SDK does (TestAwaitAndStatusRefuseAnIDOutsideChiodsRule,
TestApprovalMethodsRefuseAnIDOutsideChiodsRule, whose comments say the
Python SDK does too). It was sent: "req/1" or ".." went into the path and
the answer (chiod's 404, its redirect for "..") came back as some other
error."""

import http.server
import json
import threading
import unittest

import chio

from .test_answer_field_types import agent_client


class IDRule(unittest.IsolatedAsyncioTestCase):
    def setUp(self):
        self.paths: list[str] = []
        paths = self.paths

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self):
                paths.append(self.path)
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                data = b'{"status":"allowed","request_id":"req-1"}'
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer

        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        self.client = agent_client(f"http://127.0.0.1:{srv.server_address[1]}")

    async def assert_bad_request(self, what: str, op) -> None:
        try:
            r = await op()
        except chio.BadRequest:
            return
        except chio.ChioError as e:
            self.fail(f"{what}: {type(e).__name__}: {e}, want BadRequest (paths sent: {self.paths})")
        self.fail(f"{what}: returned {r!r}, want BadRequest")

    async def test_await_and_status_refuse_an_id_outside_chiods_rule(self):
        c = self.client
        for name, id in {
            "newline": "req-1\nreq-2",
            "slash": "req/1",
            "dot-dot": "..",
            "too long": "req-" + "x" * 200,
            "approval space": "ar-1 2",
        }.items():
            with self.subTest(name):
                await self.assert_bad_request(f"await_approval({id!r})", lambda: c.await_approval(id, timeout=2))
                await self.assert_bad_request(f"status({id!r})", lambda: c.status(id))
        self.assertEqual(self.paths, [], "requests sent for ids chiod refuses")

    async def test_approval_methods_refuse_an_id_outside_chiods_rule(self):
        c = self.client
        for name, id in {"space": "ar-1 2", "slash": "ar-1/respond", "too long": "ar-" + "x" * 200}.items():
            with self.subTest(name):
                token = json.dumps({"request_id": id})
                await self.assert_bad_request(f"cancel({id!r})", lambda: c.cancel(id, "not needed"))
                await self.assert_bad_request(f"approval({id!r})", lambda: c.approval(id))
                await self.assert_bad_request(f"respond({id!r})", lambda: c.respond(id, token))
                await self.assert_bad_request(f"resume_with_approval({id!r})", lambda: c.resume_with_approval(token, timeout=2))
        self.assertEqual(self.paths, [], "requests sent for ids chiod refuses")


if __name__ == "__main__":
    unittest.main()
