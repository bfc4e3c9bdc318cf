"""A bearer that cannot go in an Authorization header: read from a file
with its trailing newline, the common case, or with a control character in
it. http.client raised a ValueError (not a ChioError) whose message quotes
the header, the token with it, into whatever logs the error. The SDK trims
surrounding whitespace, as fetch does in TypeScript, and refuses anything
else with BadRequest, naming no part of the token. TypeScript's
bearer.test.ts is the same test."""

import unittest

import chio
from chio import Client

from .test_retry_after import ALLOWED, Scripted


class Bearer(unittest.IsolatedAsyncioTestCase):
    async def test_a_token_file_with_a_newline_is_read_as_the_token(self):
        srv = Scripted([(200, None, ALLOWED)])
        self.addCleanup(srv.close)
        res = await Client(srv.url, bearer="s3cr3t-token\n").status("req-x")
        self.assertIsInstance(res, chio.Allowed, repr(res))

    def test_a_bearer_with_a_control_character_is_refused_without_quoting_it(self):
        for bearer in ("s3cr3t\ntoken", "s3cr3t\r\nX-Injected: 1", "s3cr3t\x00token", "s3cr3t\u00e9token"):
            with self.subTest(bearer=bearer):
                with self.assertRaises(chio.BadRequest) as cm:
                    Client("http://127.0.0.1:7420", bearer=bearer)
                self.assertNotIn("s3cr3t", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
