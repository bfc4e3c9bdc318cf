"""A proxy from the environment (http_proxy, as a corporate network sets
it) is not used for a chiod on this machine (localhost, 127.0.0.0/8, ::1):
the proxy cannot reach it, and would see every call's arguments, output and
Chio-Proof. The Go SDK and the chio CLI (net/http's ProxyFromEnvironment)
never proxy a loopback address either."""

import os
import unittest
from unittest import mock

import chio

from .test_retry_after import ALLOWED, Scripted, agent_client

PROXY_ERROR = b"<html>502 Bad Gateway: cannot reach 127.0.0.1</html>"


class LoopbackProxy(unittest.IsolatedAsyncioTestCase):
    async def test_environment_proxy_is_not_used_for_a_loopback_chiod(self):
        chiod = Scripted([(200, None, ALLOWED)])
        proxy = Scripted([(502, None, PROXY_ERROR)])
        self.addCleanup(chiod.close)
        self.addCleanup(proxy.close)
        env = {k: v for k, v in os.environ.items() if k.lower() not in ("no_proxy", "http_proxy", "https_proxy", "all_proxy")}
        env["http_proxy"] = proxy.url
        for url in (chiod.url, chiod.url.replace("127.0.0.1", "localhost")):
            with self.subTest(url=url), mock.patch.dict(os.environ, env, clear=True):
                res = await agent_client(url).call_tool("demo", "echo", {}, request_id="req-x", timeout=10)
                self.assertIsInstance(res, chio.Allowed, repr(res))
                self.assertEqual(len(proxy.arrived), 0, "the call went through the environment's proxy")


if __name__ == "__main__":
    unittest.main()
