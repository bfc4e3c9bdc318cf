"""chiod takes a request id of 1..128 characters of [A-Za-z0-9._:-], not
"." or "..", and not starting with "ar-" (approval.IDRule). call_tool
checked only the last: an id with a character that cannot go in the
Idempotency-Key header (a newline) made http.client raise a ValueError, not
a ChioError, from the request's thread. Bad input is BadRequest, at once,
with nothing sent. TypeScript's request-id.test.ts is the same test."""

import unittest

import chio

from .test_retry_after import Scripted, agent_client


class RequestID(unittest.IsolatedAsyncioTestCase):
    async def test_a_request_id_chiod_would_refuse_is_bad_request_and_not_sent(self):
        srv = Scripted([(500, None, b"{}")])
        self.addCleanup(srv.close)
        client = agent_client(srv.url)
        for request_id in ("req-a\nb", "req-a\r\nX-Injected: 1", "req a", "req-\u00e9", "..", "r" * 129):
            with self.subTest(request_id=request_id):
                with self.assertRaises(chio.BadRequest):
                    await client.call_tool("demo", "echo", {}, request_id=request_id)
        self.assertEqual(len(srv.arrived), 0, "a call with a bad request id was sent")


if __name__ == "__main__":
    unittest.main()
