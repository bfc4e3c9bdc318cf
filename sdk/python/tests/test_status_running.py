"""status() of a call that was allowed outright and whose tool is still
running (chiod: "dispatching", no approval id) is a PendingApproval with
running=True, and the documented way on — await_approval(request_id) —
finishes it (await_approval("") would be a bad request)."""

import http.server
import threading
import unittest

import chio
from chio import Client, PendingApproval


def fake_chiod(test: unittest.TestCase, *states: str) -> tuple[str, list[str]]:
    """A chiod answering GETs with states in turn (the last one repeated);
    returns its url and the paths it was asked."""
    paths: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            paths.append(self.path)
            data = states[min(len(paths) - 1, len(states) - 1)].encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    test.addCleanup(srv.server_close)
    test.addCleanup(srv.shutdown)
    return f"http://127.0.0.1:{srv.server_address[1]}", paths


class StatusOfARunningCall(unittest.IsolatedAsyncioTestCase):
    async def test_running_without_a_human_is_awaited_by_its_request_id(self):
        url, paths = fake_chiod(
            self,
            '{"status":"dispatching","request_id":"run-5:deploy","receipt_id":"rc-1"}',
            '{"status":"allowed","request_id":"run-5:deploy","receipt_id":"rc-1","output":{"ok":true},"execution":"succeeded"}',
        )
        c = Client(url, bearer="reader-token")
        r = await c.status("run-5:deploy")
        self.assertIsInstance(r, PendingApproval)
        self.assertTrue(r.running)
        self.assertEqual(r.approval_request_id, "")
        with self.assertRaises(chio.BadRequest):
            await c.await_approval(r.approval_request_id)
        done = await c.await_approval(r.request_id)
        self.assertEqual((done.status, done.output), ("allowed", {"ok": True}))
        self.assertTrue(all(p.startswith("/v1/calls/run-5") for p in paths), paths)

    async def test_a_human_wait_is_not_running_an_approved_running_call_is(self):
        for state, running in (
            ('{"status":"pending_approval","request_id":"r-1","approval_request_id":"ar-1","deadline":1900000000}', False),
            ('{"status":"dispatching","request_id":"r-1","approval_request_id":"ar-1"}', True),
        ):
            with self.subTest(state=state):
                url, _ = fake_chiod(self, state)
                r = await Client(url, bearer="reader-token").status("r-1")
                self.assertIsInstance(r, PendingApproval)
                self.assertEqual((r.running, r.approval_request_id), (running, "ar-1"))


if __name__ == "__main__":
    unittest.main()
