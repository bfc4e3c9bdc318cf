"""The client against a real chiod, beyond the seed's sketch: waiting (also
across a chiod restart), idempotent retries (and a retry that meets its call
in flight), cancelling, confirm and ask, tool errors, input checks, and the
synchronous twin."""

import asyncio
import json
import os
import subprocess
import sys
import time
import unittest

import chio
from chio import (
    Allowed,
    BadRequest,
    CanonicalJSONError,
    Client,
    Conflict,
    Declined,
    PendingApproval,
    RawJSON,
    SyncClient,
    TimedOut,
    ToolDenied,
    Unauthorized,
)

from chio._http import request as http_request
from chio.signing import cancel_proof, status_proof

from . import harness

REFUND = dict(
    arguments={"customer_id": "cust-9012", "amount": 450, "currency": "USD"},
    governed_intent={"purpose": "Refund order #8834", "max_amount": {"units": 450, "currency": "USD"}},
)
HERE = os.path.dirname(os.path.abspath(__file__))


def setUpModule():
    harness.chiod()


def client_for(agent, url=None):
    return Client(url or harness.chiod().url, key_file=agent.key_file, capability_file=agent.capability_file)


def receipt(receipt_id):
    """A stored receipt, read with the operator's token."""
    d = harness.chiod()
    status, body = http_request("GET", f"{d.url}/v1/receipts/{receipt_id}", None, {"Authorization": "Bearer " + d.admin_token}, 10)
    assert status == 200, (status, body)
    return json.loads(body)


async def pending_request(agent):
    reader = Client(harness.chiod().url, bearer=harness.chiod().admin_token)
    while True:
        for req in await reader.pending():
            if req.get("subject_id") == agent.public_key:
                return req
        await asyncio.sleep(0.05)


class Waiting(unittest.IsolatedAsyncioTestCase):
    async def test_await_after_the_cli_approves(self):
        agent = await harness.agent("refunds")
        c = client_for(agent)
        r = await c.call_tool("payment-server", "issue_refund", **REFUND)
        self.assertIsInstance(r, PendingApproval)
        self.assertEqual((await c.status(r.approval_request_id)).approval_request_id, r.approval_request_id)
        waiter = asyncio.ensure_future(c.await_approval(r.approval_request_id, timeout=60))
        await asyncio.sleep(0.2)
        self.assertFalse(waiter.done())
        await asyncio.to_thread(harness.chiod().approve, r.approval_request_id, "--note", "ok")
        done = await waiter
        self.assertIsInstance(done, Allowed)
        self.assertEqual(done.output["amount"], 450)
        self.assertEqual((done.approval.approver_name, done.approval.note), ("Finance Lead", "ok"))
        self.assertFalse(done.approval.amended)
        # Awaiting a call that already ended answers at once, by either id.
        again = await c.await_approval(r.request_id, timeout=5)
        self.assertEqual(again.output, done.output)

    async def test_timeout_leaves_the_call_pending(self):
        agent = await harness.agent("refunds")
        c = client_for(agent)
        r = await c.call_tool("payment-server", "issue_refund", **REFUND)
        t0 = time.monotonic()
        with self.assertRaises(TimedOut):
            await c.await_approval(r.approval_request_id, timeout=0.5)
        self.assertLess(time.monotonic() - t0, 5)
        self.assertIsInstance(await c.status(r.request_id), PendingApproval)

    async def test_amended_approval(self):
        agent = await harness.agent("refunds")
        c = client_for(agent)
        r = await c.call_tool("payment-server", "issue_refund", **REFUND)
        amend = '{"customer_id":"cust-9012","amount":300,"currency":"USD"}'
        await asyncio.to_thread(harness.chiod().approve, r.approval_request_id, "--amend", amend)
        done = await c.await_approval(r.request_id, timeout=30)
        self.assertEqual(done.output["amount"], 300)
        self.assertEqual(done.approval.amended_arguments, json.loads(amend))
        self.assertTrue(done.approval.amended)

    async def test_await_across_a_chiod_restart(self):
        d = harness.Chiod().start()
        self.addCleanup(d.close)
        agent = await asyncio.to_thread(d.new_agent, "refunds")
        c = client_for(agent, d.url)
        r = await c.call_tool("payment-server", "issue_refund", **REFUND)
        waiter = asyncio.ensure_future(c.await_approval(r.approval_request_id, timeout=60))
        await asyncio.sleep(0.3)
        await asyncio.to_thread(d.stop)
        await asyncio.sleep(0.5)  # the waiter is reconnecting meanwhile
        self.assertFalse(waiter.done())
        await asyncio.to_thread(d.start)
        await asyncio.to_thread(d.approve, r.approval_request_id)
        done = await waiter
        self.assertIsInstance(done, Allowed)
        self.assertEqual(done.output["amount"], 450)

    async def test_resume_with_the_same_token_twice(self):
        agent = await harness.agent("refunds")
        c = client_for(agent)
        r = await c.call_tool("payment-server", "issue_refund", **REFUND)
        req = await c.approval(r.approval_request_id)  # the agent reads its own request
        token = chio.sign_approval(req, chio.PrivateKey.load(harness.FINANCE_LEAD_KEY))
        first = await c.resume_with_approval(approval_token=token, approval_request_id=r.approval_request_id)
        # Presenting it again (a retried workflow step) reports the same end.
        second = await c.resume_with_approval(approval_token=token.decode())
        self.assertEqual(first.output, second.output)
        with self.assertRaises(BadRequest):
            await c.resume_with_approval(approval_token=token, approval_request_id="ar-other")


class Retries(unittest.IsolatedAsyncioTestCase):
    async def _through(self, faults):
        agent = await harness.agent("refunds-auto")
        proxy = harness.FlakyProxy(harness.chiod().url, faults)
        self.addCleanup(proxy.close)
        c = client_for(agent, proxy.url)
        r = await c.call_tool("payment-server", "issue_refund", **REFUND, request_id=f"retry-{time.time_ns()}")
        return r, proxy

    async def test_lost_answer_is_retried_with_the_same_request_id(self):
        r, proxy = await self._through(["drop", "pass"])
        self.assertIsInstance(r, Allowed)
        self.assertEqual(len(proxy.bodies), 2)
        self.assertEqual(proxy.bodies[0], proxy.bodies[1])  # same id, content and proof
        # The tool ran once although chiod saw the call twice.
        self.assertEqual([e["request_id"] for e in harness.chiod().ledger()].count(r.request_id), 1)

    async def test_503_is_retried(self):
        r, proxy = await self._through(["503", "503", "pass"])
        self.assertIsInstance(r, Allowed)
        self.assertEqual(len(proxy.bodies), 3)

    async def test_retries_are_bounded(self):
        with self.assertRaises(chio.Unavailable) as cm:
            await self._through(["503"] * 10)
        self.assertEqual(cm.exception.status, 503)

    async def test_a_retry_that_meets_the_call_in_flight_waits_for_it(self):
        # chiod answers "dispatching" with no approval id when a retry arrives
        # while the call it already allowed is still running: that is no
        # human wait, and call_tool reports the call's outcome instead.
        r, proxy = await self._through(["dispatching"])
        self.assertIsInstance(r, Allowed)
        self.assertEqual((r.output["amount"], r.execution, r.failed), (450, "succeeded", False))
        self.assertIn(("GET", f"/v1/calls/{r.request_id}?wait=30000ms"), proxy.requests)

    async def test_replayed_request_id(self):
        agent = await harness.agent("refunds")
        c = client_for(agent)
        rid = f"run-{time.time_ns()}:refund"
        first = await c.call_tool("payment-server", "issue_refund", **REFUND, request_id=rid)
        # A restarted run repeating the step gets the same pending approval,
        # deadline included, not a second one.
        again = await client_for(agent).call_tool("payment-server", "issue_refund", **REFUND, request_id=rid)
        self.assertIsInstance(again, PendingApproval)
        self.assertEqual(again.approval_request_id, first.approval_request_id)
        self.assertEqual(again.deadline, first.deadline)
        with self.assertRaises(Conflict):
            await c.call_tool("payment-server", "issue_refund", arguments={**REFUND["arguments"], "amount": 451},
                              governed_intent=REFUND["governed_intent"], request_id=rid)


class Cancelling(unittest.IsolatedAsyncioTestCase):
    async def _parked(self):
        agent = await harness.agent("refunds")
        c = client_for(agent)
        r = await c.call_tool("payment-server", "issue_refund", **REFUND)
        self.assertIsInstance(r, PendingApproval)
        return agent, c, r

    async def test_the_agent_cancels_with_its_key(self):
        _, c, r = await self._parked()
        waiter = asyncio.ensure_future(c.await_approval(r.approval_request_id, timeout=60))
        await asyncio.sleep(0.2)
        self.assertFalse(waiter.done())
        done = await c.cancel(r.approval_request_id, "customer withdrew the request")
        self.assertIsInstance(done, ToolDenied)
        self.assertEqual((done.status, done.reason, done.request_id), ("cancelled", "customer withdrew the request", r.request_id))
        # Whoever waits learns it: a waiter already parked, a later await by
        # either id, a status read.
        for got in (await waiter, await c.await_approval(r.approval_request_id, timeout=5),
                    await c.await_approval(r.request_id, timeout=5), await c.status(r.request_id)):
            self.assertIsInstance(got, ToolDenied)
            self.assertEqual((got.status, got.reason, got.receipt_id), ("cancelled", "customer withdrew the request", done.receipt_id))
        req = await c.approval(r.approval_request_id)
        self.assertEqual((req["status"], req["resolution"]["decided_by"]), ("cancelled", "agent"))
        rc = receipt(done.receipt_id)
        self.assertEqual(rc["decision"], {"verdict": "cancelled", "reason": "customer withdrew the request"})
        self.assertEqual((rc["metadata"]["cancelled_by"], rc["metadata"]["previous_receipt_id"]), ("agent", r.receipt_id))
        self.assertNotIn(r.request_id, [e["request_id"] for e in harness.chiod().ledger()])  # the tool never ran
        with self.assertRaises(Conflict):
            await c.cancel(r.approval_request_id, "again")

    async def test_an_operator_cancels_with_the_admin_token(self):
        _, c, r = await self._parked()
        op = SyncClient(harness.chiod().url, bearer=harness.chiod().admin_token)
        done = await asyncio.to_thread(op.cancel, r.approval_request_id, "duplicate of order #8833")
        self.assertEqual((done.status, done.reason), ("cancelled", "duplicate of order #8833"))
        self.assertEqual(receipt(done.receipt_id)["metadata"]["cancelled_by"], "admin")
        got = await c.await_approval(r.approval_request_id, timeout=5)
        self.assertEqual((got.status, got.reason), ("cancelled", "duplicate of order #8833"))

    async def test_a_read_proof_cannot_cancel(self):
        agent, c, r = await self._parked()
        other = await harness.agent("refunds")
        key, aid = chio.PrivateKey.load(agent.key_file), r.approval_request_id
        url = f"{harness.chiod().url}/approvals/{aid}/cancel"
        for name, proof in (
            ("the agent's read proof for the approval", status_proof(key, aid)),
            ("the agent's read proof for the call", status_proof(key, r.request_id)),
            ("a cancel proof for another reason", cancel_proof(key, aid, "another reason")),
            ("another agent's cancel proof", cancel_proof(chio.PrivateKey.load(other.key_file), aid, "withdrawn")),
        ):
            with self.subTest(name):
                status, body = await asyncio.to_thread(
                    http_request, "POST", url, b'{"reason":"withdrawn"}', {"Content-Type": "application/json", "Chio-Proof": proof}, 10
                )
                self.assertEqual((status, json.loads(body)["error"]), (401, "unauthorized"))
        with self.assertRaises(Unauthorized):  # another agent's client, signing properly
            await client_for(other).cancel(aid, "withdrawn")
        self.assertIsInstance(await c.status(aid), PendingApproval)

    async def test_cancel_after_approval_is_a_conflict(self):
        _, c, r = await self._parked()
        await asyncio.to_thread(harness.chiod().approve, r.approval_request_id)
        with self.assertRaises(Conflict) as cm:
            await c.cancel(r.approval_request_id, "too late")
        self.assertEqual((cm.exception.status, cm.exception.code), (409, "conflict"))
        done = await c.await_approval(r.approval_request_id, timeout=30)
        self.assertIsInstance(done, Allowed)  # the decision stands
        self.assertEqual(done.output["amount"], 450)

    async def test_bad_input_is_refused_before_sending(self):
        agent = await harness.agent("refunds")
        c = Client("http://127.0.0.1:9", key_file=agent.key_file)  # nothing listens
        for aid, reason in (("req-1", "withdrawn"), ("", "withdrawn"), ("ar-1", ""), ("ar-1", " \t\n")):
            with self.subTest(aid=aid, reason=reason), self.assertRaises(BadRequest):
                await c.cancel(aid, reason)
        with self.assertRaises(CanonicalJSONError):
            await c.cancel("ar-1", "\ud800")
        with self.assertRaises(Unauthorized):  # neither a key nor a bearer
            await Client("http://127.0.0.1:9").cancel("ar-1", "withdrawn")
        with self.assertRaises(chio.TransportError):
            await c.cancel("ar-1", "withdrawn")


class HumanInTheLoop(unittest.IsolatedAsyncioTestCase):
    async def test_confirm(self):
        agent = await harness.agent("confirm")
        c = client_for(agent)
        for verb, extra, want in (("approve", (), True), ("deny", ("--reason", "not today"), False)):
            with self.subTest(verb):
                asked = asyncio.ensure_future(c.confirm("Deploy to production?", {"env": "prod"}, timeout=60))
                req = await pending_request(agent)
                self.assertEqual(req["kind"], "confirm")
                args = ("approval", verb, req["approval_id"], "--key", harness.FINANCE_LEAD_KEY, *extra)
                await asyncio.to_thread(harness.chiod().chio, *args)
                self.assertIs(await asked, want)

    async def test_ask(self):
        agent = await harness.agent("ask")
        c = client_for(agent)
        questions = [
            {"id": "framework", "text": "Which framework?", "type": "single", "options": ["react", "vue"], "allow_other": True},
            {"id": "features", "text": "Enable:", "type": "multi", "options": ["auth", "payments"]},
            {"id": "name", "text": "Project name?", "type": "text"},
        ]
        asked = asyncio.ensure_future(c.ask("New project", questions, timeout=60, request_id=f"ask-{time.time_ns()}"))
        req = await pending_request(agent)
        answers = '{"framework":"svelte","features":["auth","payments"],"name":"Zoë"}'
        await asyncio.to_thread(harness.chiod().approve, req["approval_id"], "--answers", answers)
        self.assertEqual(await asked, {"framework": ["svelte"], "features": ["auth", "payments"], "name": ["Zoë"]})

        declined = asyncio.ensure_future(c.ask("Again?", questions[2:], timeout=60))
        req = await pending_request(agent)
        await asyncio.to_thread(harness.chiod().chio, "approval", "deny", req["approval_id"], "--key", harness.FINANCE_LEAD_KEY, "--reason", "no")
        with self.assertRaises(Declined):
            await declined

    async def test_confirm_denied_by_policy(self):
        agent = await harness.agent("echo")  # no confirm grant
        with self.assertRaises(chio.DeniedByPolicy):
            await client_for(agent).confirm("Deploy?", timeout=10)


class Outcomes(unittest.IsolatedAsyncioTestCase):
    async def test_tool_error_is_visible(self):
        agent = await harness.agent("files")
        c = client_for(agent)
        r = await c.call_tool("demo", "delete_file", {"path": "no/such/file"})
        self.assertIsInstance(r, Allowed)
        self.assertEqual((r.tool_error, r.execution, r.failed), ("not found", "tool_error", True))
        # The failure has its own receipt, chained to the allow receipt.
        rc = receipt(r.receipt_id)
        self.assertEqual((rc["decision"]["verdict"], rc["metadata"]["execution"]), ("incomplete", "tool_error"))
        # Read back later, it says the same.
        again = await c.status(r.request_id)
        self.assertEqual((again.tool_error, again.execution, again.failed), ("not found", "tool_error", True))
        ok = await client_for(await harness.agent("echo")).call_tool("demo", "echo", {"text": "hi"})
        self.assertEqual((ok.execution, ok.failed, ok.tool_error), ("succeeded", False, None))

    async def test_raw_json_arguments(self):
        agent = await harness.agent("echo")
        r = await client_for(agent).call_tool("demo", "echo", RawJSON('{"text": "caf\\u00e9 \\u2028", "n": 1.50}'))
        self.assertIsInstance(r, Allowed)
        self.assertIn("café \u2028", json.dumps(r.output, ensure_ascii=False))

    async def test_bad_input_is_refused_before_sending(self):
        agent = await harness.agent("echo")
        c = Client("http://127.0.0.1:9", key_file=agent.key_file, capability_file=agent.capability_file)  # nothing listens
        for args, reason in (
            ({"n": 2**53 + 1}, "unsafe_number"),
            ({"x": float("nan")}, "number_range"),
            ({"s": "\ud800"}, "invalid"),
            ({"amount": 1, "AMOUNT": 9}, "duplicate_key"),  # chiod refuses case twins too
            ({"o": {"cost": 1, "co\u017ft": 999999}}, "duplicate_key"),
        ):
            with self.subTest(reason), self.assertRaises(CanonicalJSONError) as cm:
                await c.call_tool("demo", "echo", args)
            self.assertEqual(cm.exception.reason, reason)
        with self.assertRaises(CanonicalJSONError):
            RawJSON('{"n": 9.007199254740993e15}')
        with self.assertRaises(CanonicalJSONError) as cm:
            await c.call_tool("demo", "echo", {}, governed_intent={"purpose": "p", "max_amount": {"units": 1, "unit\u017f": 9}})
        self.assertEqual(cm.exception.reason, "duplicate_key")
        with self.assertRaises(BadRequest):
            await c.call_tool("demo", "echo", ["not", "an", "object"])
        with self.assertRaises(BadRequest):
            await c.call_tool("demo", "echo", {}, request_id="ar-reserved")

    async def test_capability_for_another_key(self):
        a, b = await harness.agent("echo"), await harness.agent("echo")
        with self.assertRaisesRegex(BadRequest, "subject"):
            Client(harness.chiod().url, key_file=a.key_file, capability_file=b.capability_file)

    async def test_reads_need_a_key_or_bearer(self):
        with self.assertRaises(Unauthorized):
            await Client(harness.chiod().url).await_approval("req-x", timeout=1)

    async def test_not_sent_names_the_server(self):
        agent = await harness.agent("echo")
        c = Client("http://127.0.0.1:9", key_file=agent.key_file, capability_file=agent.capability_file)
        with self.assertRaisesRegex(chio.NotSent, "127.0.0.1:9"):  # nothing listens: nothing was sent
            await c.call_tool("demo", "echo", {})


class Sync(unittest.TestCase):
    def test_from_env_in_another_process(self):
        # Park in one process, approve with the CLI, await in another.
        agent = harness.chiod().new_agent("refunds")
        env = {**os.environ, **agent.env(harness.chiod().url), "PYTHONPATH": os.path.dirname(HERE)}
        park = (
            "import chio\n"
            "r = chio.SyncClient.from_env().call_tool('payment-server', 'issue_refund',"
            " {'customer_id': 'c-1', 'amount': 450, 'currency': 'USD'},"
            " {'purpose': 'p', 'max_amount': {'units': 450, 'currency': 'USD'}})\n"
            "print(r.approval_request_id)\n"
        )
        aid = subprocess.run([sys.executable, "-c", park], env=env, capture_output=True, text=True, check=True).stdout.strip()
        self.assertTrue(aid.startswith("ar-"), aid)
        harness.chiod().approve(aid)
        resume = "import chio, sys\nr = chio.SyncClient.from_env().await_approval(sys.argv[1], timeout=30)\nprint(r.status, r.output['amount'])\n"
        out = subprocess.run([sys.executable, "-c", resume, aid], env=env, capture_output=True, text=True, check=True).stdout
        self.assertEqual(out.strip(), "allowed 450")

    def test_sync_client_outcomes(self):
        c = SyncClient(harness.chiod().url, key_file=harness.chiod().new_agent("echo").key_file,
                       capability_file=None)
        with self.assertRaises(BadRequest):  # no capability: cannot call
            c.call_tool("demo", "echo", {})
        agent = harness.chiod().new_agent("echo")
        c = SyncClient(harness.chiod().url, key_file=agent.key_file, capability_file=agent.capability_file)
        r = c.call_tool("demo", "echo", {"text": "hi"})
        self.assertIsInstance(r, Allowed)
        self.assertIsInstance(c.call_tool("payment-server", "issue_refund", **REFUND), ToolDenied)
        self.assertEqual(c.status(r.request_id).output, r.output)


if __name__ == "__main__":
    unittest.main()
