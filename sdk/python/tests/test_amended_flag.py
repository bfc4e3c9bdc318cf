"""An approver may amend a call to {} (every argument removed). An agent
that tests ``if result.approval.amended_arguments:`` reads that as no
amendment ({} is falsy in Python) and takes the output for its own call's:
approval.amended says it plainly, as the Go SDK's Amended and TypeScript's
approval.amended do. A call approved as sent has amended False."""

import unittest

from chio import results


def allowed(approval: dict) -> dict:
    return {"status": "allowed", "request_id": "req-1", "receipt_id": "rc-2", "output": {},
            "approval_request_id": "ar-1", "approval": approval}


class AmendedFlag(unittest.TestCase):
    def test_amendment_to_empty_object(self):
        r = results.from_state(allowed({"status": "approved", "approver": "ed25519:aa", "amended": True, "amended_arguments": {}}))
        self.assertTrue(r.approval.amended)
        self.assertEqual(r.approval.amended_arguments, {})

    def test_arguments_without_flag_still_amended(self):
        r = results.from_state(allowed({"status": "approved", "approver": "ed25519:aa", "amended_arguments": {"amount": 3}}))
        self.assertTrue(r.approval.amended)

    def test_not_amended(self):
        r = results.from_state(allowed({"status": "approved", "approver": "ed25519:aa", "amended": False}))
        self.assertFalse(r.approval.amended)
        self.assertIsNone(r.approval.amended_arguments)


if __name__ == "__main__":
    unittest.main()
