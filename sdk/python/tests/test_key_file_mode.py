"""A private key file others may read lets them sign as its holder (an
approver's key approves, an agent's calls). Loading one warns, with the
fix; it still loads (keys are copied between machines whose modes the SDK
does not control; the repository's demo keys check out 0644)."""

import os
import tempfile
import unittest
import warnings

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

import chio


@unittest.skipUnless(os.name == "posix", "file modes say who may read a file only on POSIX")
class KeyFileModeTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "me.pem")
        pem = Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(pem)

    def tearDown(self):
        self.dir.cleanup()

    def test_private_key_file_loads_quietly(self):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            chio.PrivateKey.load(self.path)

    def test_key_file_others_may_read_warns(self):
        os.chmod(self.path, 0o644)
        with self.assertWarns(chio.KeyFileModeWarning) as w:
            key = chio.PrivateKey.load(self.path)
        msg = str(w.warning)
        self.assertIn("0o644", msg)
        self.assertIn(f"chmod 600 {self.path}", msg)
        self.assertIn(key.public_key, msg)


if __name__ == "__main__":
    unittest.main()
