"""The asyncio client: one agent talking to one chiod (SPEC §6).

The Go SDK (sdk/) is the reference; this mirrors its behaviour: signed call
proofs, retries with the same request id, waiting across agent and chiod
restarts (and waiting out a call still in flight), Chio-Proof reads,
cancelling a parked call, resume with a token, confirm and ask.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import os
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, Awaitable, Callable, TypeVar

from . import _http
from ._approvals import _Approvals
from ._wire import (
    ID_RULE,
    MAX_CAPABILITY_BYTES,
    _check_id,
    _check_timeout,
    _hitl_denial,
    _json_object,
    _loads_envelope,
    _parse_capability,
    _parse_response,
    _path,
    _read_file,
    _token_bytes,
)
from .canon import RawJSON, canonicalize
from .errors import (
    BadAnswer,
    BadRequest,
    Cancelled,
    ChioError,
    Conflict,
    Declined,
    DeniedByPolicy,
    NotSent,
    OutcomeUnknown,
    TimedOut,
    Unauthorized,
    VoteRecorded,
    api_error,
    parse_retry_after,
    retryable,
)
from .keys import PrivateKey
from .results import Allowed, PendingApproval, Result, ToolDenied, from_state
from .signing import STATUS_PROOF_HEADER, call_proof, new_id, parameter_hash, status_proof

DEFAULT_URL = "http://127.0.0.1:7420"
DEFAULT_HITL_SERVER = "demo"  # the server whose confirm/ask verbs are used

# Retry policy for POST /v1/calls. A retry re-sends the same request id, so
# it can never run a tool twice; it is still bounded, because a chiod that
# keeps failing should surface as an error, not a hang.
CALL_ATTEMPTS = 4
CALL_FIRST_BACKOFF = 0.25
# A proof older than this is re-signed before a retry (chiod refuses proofs
# more than 60 s old); the id and content, which chiod deduplicates on, stay.
PROOF_REFRESH = 30.0

# Waiting: one long-poll (chiod caps it at 60 s), the margin by which one
# request may outlive it before the connection is presumed dead, and the
# reconnect pacing through network errors and chiod restarts.
LONG_POLL = 30.0
POLL_MARGIN = 15.0
RECONNECT_FIRST = 0.25
RECONNECT_MAX = 5.0
REQUEST_TIMEOUT = 60.0  # any other request
# Making a connection: the TCP connect and, for https, the TLS handshake.
# The same steps and default as the Go SDK (DefaultConnectTimeout) and the
# TypeScript SDK (undici's connect timeout). No byte of a request is
# written before its connection is ready, so a call whose every attempt
# ran out of connect time is NotSent.
CONNECT_TIMEOUT = 10.0


_FINAL = ("allowed", "denied", "cancelled")
# A request id chiod takes: 1..128 characters of [A-Za-z0-9._:-], not "."
# or ".." (checked apart).
_REQUEST_ID = ID_RULE
_USER_AGENT = "chio-python/0.1"

T = TypeVar("T")


def _check_names(state: dict, request_id: str, status: int) -> None:
    """chiod's call state names its call (request_id, always). One naming
    another call, or none (a proxy or cache that served another request's
    answer), says nothing about this one: BadAnswer, never its outcome."""
    named = state.get("request_id")
    if named != request_id:
        raise BadAnswer(
            f"chio: bad response from chiod ({status}): the state (status {str(state.get('status'))[:40]!r}) "
            f"of call {str(named)[:140]!r}, not of {request_id}",
            status=status,
        )


class Client(_Approvals):
    """An agent's asyncio client. Safe to share between tasks.

    key and capability are needed to call tools; either may be absent for
    approver or reader tooling. bearer is a reader or admin token: agents do
    not need one (they read their own calls with a Chio-Proof); it is never
    read from the environment, so that an agent does not run with an
    operator's token by accident. connect_timeout (seconds) bounds making
    each request's connection: the TCP connect and, for https, the TLS
    handshake.
    """

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        key: PrivateKey | None = None,
        key_file: str | os.PathLike | None = None,
        capability: bytes | str | None = None,
        capability_file: str | os.PathLike | None = None,
        bearer: str | None = None,
        connect_timeout: float = CONNECT_TIMEOUT,
    ):
        parts = urllib.parse.urlsplit(url or "")
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
            raise BadRequest(f"chio: url {url!r} must be http(s)://host[:port]")
        self._base = url.rstrip("/")
        if key_file is not None:
            key = PrivateKey.load(key_file)
        self._key = key
        if capability_file is not None:
            capability = _read_file(capability_file, MAX_CAPABILITY_BYTES, "capability")
        self._cap_raw: bytes | None = None
        self._cap_id = ""
        if capability is not None:
            self._cap_raw, self._cap_id, subject = _parse_capability(capability)
            # A capability for another key would only fail later, call by
            # call, as "unauthorized": say what is wrong now.
            if key is not None and subject != key.public_key:
                raise BadRequest(f"chio: the capability's subject {subject!r} is not this key ({key.public_key})")
        if bearer is not None:
            # A token file's newline is trimmed; a control character left
            # would fail in http.client with the token in its message: refuse
            # it now, quoting none of it.
            bearer = bearer.strip()
            if not bearer.isascii() or not bearer.isprintable():
                raise BadRequest("chio: the bearer token has a control or non-ASCII character (a header cannot carry it)")
        self._bearer = bearer
        if isinstance(connect_timeout, bool) or not isinstance(connect_timeout, (int, float)) or not connect_timeout > 0:
            raise BadRequest(f"chio: connect_timeout {connect_timeout!r} must be a positive number of seconds")
        self._connect_timeout = float(connect_timeout)

    @classmethod
    def from_env(cls, **overrides: Any) -> "Client":
        """A client from CHIO_URL (default http://127.0.0.1:7420), CHIO_KEY
        (the agent's PKCS#8 PEM key file) and CHIO_CAPABILITY (the capability
        file), as the chio CLI and the Go SDK's FromEnv read them. Keyword
        arguments override the environment."""
        kw: dict[str, Any] = {"url": os.environ.get("CHIO_URL") or DEFAULT_URL}
        if os.environ.get("CHIO_KEY"):
            kw["key_file"] = os.environ["CHIO_KEY"]
        if os.environ.get("CHIO_CAPABILITY"):
            kw["capability_file"] = os.environ["CHIO_CAPABILITY"]
        if "key" in overrides:
            kw.pop("key_file", None)
        if "capability" in overrides:
            kw.pop("capability_file", None)
        kw.update(overrides)
        return cls(**kw)

    @property
    def public_key(self) -> str:
        """The agent key's text form ("" without a key)."""
        return self._key.public_key if self._key else ""

    # --- calling tools ----------------------------------------------------

    async def call_tool(
        self,
        server: str,
        tool: str,
        arguments: Mapping | RawJSON | None = None,
        governed_intent: Mapping | RawJSON | None = None,
        *,
        operation: str = "invoke",
        request_id: str | None = None,
        timeout: float | None = None,
    ) -> Result:
        """Submit a call and return Allowed, PendingApproval or ToolDenied.

        A denial is a result, not an exception. request_id makes the call
        idempotent across processes: the same id with the same content gets
        the first call's outcome (a restarted run can replay its steps); the
        same id with other content is Conflict. Default: "req-" + a UUIDv7;
        1..128 characters of [A-Za-z0-9._:-], not "." or "..", not starting
        with "ar-" (chiod's rule; another is BadRequest, nothing sent).
        After a dropped connection, a 5xx or a 429 the same id and content
        are sent again, a few times, with backoff. A call chiod allowed but
        is still running (such a retry can meet it in flight) is waited out:
        the result is its outcome, never a PendingApproval without a human.

        When every attempt failed and some answer was lost, it raises
        OutcomeUnknown (TransportError is one) with ``request_id`` set: the
        call may have run; retry with that request_id or await it.
        Unavailable (chiod's own 503 on every attempt) means nothing was
        allowed. NotSent (an Unavailable, with ``request_id``) means chiod
        could not be connected to at all (refused, no route, an unknown
        host): the call was not sent and did not run.

        timeout (seconds, None = no limit) bounds the whole call, retries
        included. When it passes, call_tool raises NotSent if no attempt
        may have reached chiod (every one failed before its connection was
        ready, or was turned away by chiod), else OutcomeUnknown. Cancelling
        the task instead (asyncio.timeout, wait_for) raises CancelledError
        as asyncio wants; an attempt whose connection was not ready yet is
        then never sent, and a note on the error says whether the call may
        have been sent.
        """
        if self._key is None or self._cap_raw is None:
            raise BadRequest("chio: calling a tool needs the agent key and capability (key=, capability= or from_env)")
        if not isinstance(server, str) or not server or not isinstance(tool, str) or not tool:
            raise BadRequest("chio: server and tool are required")
        if request_id is None:
            request_id = new_id("req-")
        elif (
            # chiod's rule (approval.IDRule), checked before anything is
            # sent: an id that cannot go in a header would fail in http.client.
            not isinstance(request_id, str)
            or not _REQUEST_ID.fullmatch(request_id)
            or request_id in (".", "..")
            or request_id.startswith("ar-")
        ):
            raise BadRequest(
                f"chio: request id {request_id!r}: must be 1..128 characters of [A-Za-z0-9._:-], "
                'not "." or "..", not starting with ar- (approval ids)'
            )
        args = _json_object(arguments if arguments is not None else {}, "arguments")
        intent = None if governed_intent is None else _json_object(governed_intent, "governed_intent")
        ph = parameter_hash(server, tool, args, intent)
        # Encoded once: every attempt sends the same content under the same id.
        fixed = (
            b'{"request_id":' + canonicalize(request_id)
            + b',"capability":' + self._cap_raw
            + b',"server":' + canonicalize(server)
            + b',"tool":' + canonicalize(tool)
            + b',"operation":' + canonicalize(operation)
            + b',"arguments":' + canonicalize(args)
            + (b',"governed_intent":' + canonicalize(intent) if intent is not None else b"")
        )

        _check_timeout(timeout)
        if timeout is not None and timeout < 0:
            raise BadRequest(f"chio: timeout {timeout!r} must be a number of seconds")
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        body, signed_at = b"", 0.0
        backoff = CALL_FIRST_BACKOFF
        lost = False  # some attempt may have reached chiod without its answer reaching us
        for attempt in range(1, CALL_ATTEMPTS + 1):
            if not body or time.time() - signed_at > PROOF_REFRESH:
                signed_at = time.time()
                proof = call_proof(
                    self._key,
                    request_id=request_id,
                    capability_id=self._cap_id,
                    server=server,
                    tool=tool,
                    parameter_hash=ph,
                    issued_at=int(signed_at),
                )
                body = fixed + b',"proof":' + canonicalize(proof) + b"}"
            conn = _http.Attempt()
            try:
                post = self._post_call(request_id, body, conn)
                if deadline is None:
                    state = await post
                else:
                    state = await asyncio.wait_for(post, max(0.0, deadline - loop.time()))
                break
            except TimeoutError:  # the deadline (the attempt itself raises only ChioError)
                # An attempt whose connection was not ready sent nothing, and
                # now never will.
                raise self._call_timed_out(request_id, timeout, lost or not conn.give_up()) from None
            except asyncio.CancelledError as e:
                sent = lost or not conn.give_up()
                e.add_note(
                    f"chio: call {request_id} was cancelled; "
                    + ("it may have reached chiod and run: retry it with the same request_id or await it" if sent else "it was not sent")
                )
                raise
            except ChioError as e:
                # An attempt that could not connect sent nothing: not lost.
                not_sent = isinstance(e, _http.ConnectFailed)
                lost = lost or isinstance(e, OutcomeUnknown) and not not_sent
                # Ask again no sooner than chiod's Retry-After; if it said
                # a time past the deadline, its refusal is the answer now.
                pause = max(backoff, e.retry_after)
                told_past_deadline = e.retry_after > backoff and deadline is not None and loop.time() + pause >= deadline
                if not retryable(e) or attempt == CALL_ATTEMPTS or told_past_deadline:
                    e.add_note(f"chio: call {request_id} (attempt {attempt} of {CALL_ATTEMPTS})")
                    if not_sent and not lost:
                        # The last attempt could not connect, and every
                        # earlier one could not either or was turned away
                        # (chiod's 503, a 429): the call did not run.
                        raise NotSent(
                            f"chio: call {request_id} was not sent, it did not run "
                            f"(is chiod running at {self._base}?): {e}",
                            request_id=request_id,
                        ) from e
                    if isinstance(e, OutcomeUnknown) and not not_sent:
                        e.request_id = request_id
                        raise
                    if lost:
                        # Even if the last attempt met chiod's own 503, an
                        # earlier one may have run the call: never report it
                        # as Unavailable ("nothing was allowed").
                        raise OutcomeUnknown(
                            f"chio: call {request_id}: outcome unknown, it may have run "
                            f"(retry with the same request_id or await it): {e}",
                            status=e.status,
                            code=e.code,
                            request_id=request_id,
                        ) from e
                    raise
            if deadline is not None and loop.time() + pause >= deadline:
                # The next attempt would come after the deadline.
                raise self._call_timed_out(request_id, timeout, lost)
            try:
                await asyncio.sleep(pause)
            except asyncio.CancelledError as e:
                e.add_note(
                    f"chio: call {request_id} was cancelled; "
                    + ("it may have reached chiod and run: retry it with the same request_id or await it" if lost else "it was not sent")
                )
                raise
            backoff *= 2

        if state.get("status") == "dispatching" and not state.get("approval_request_id"):
            # Allowed and in flight (a retry while chiod finishes the call it
            # already decided): wait for its outcome rather than report a
            # human wait that is not happening. Whatever ends that wait, the
            # call was allowed and is running: it may have run.
            remaining = None if deadline is None else max(0.0, deadline - loop.time())
            try:
                return await self.await_approval(request_id, remaining)
            except OutcomeUnknown as e:
                e.request_id = request_id
                raise
            except ChioError as e:
                raise OutcomeUnknown(
                    f"chio: call {request_id}: allowed and running, outcome unknown, it may have run "
                    f"(retry with the same request_id or await it): {e}",
                    status=e.status,
                    code=e.code,
                    request_id=request_id,
                ) from e
        try:
            result = from_state(state)
        except ChioError as e:
            # An answer naming no status chiod sends: the call may have been
            # decided and run. Never a plain error read as "it failed".
            raise OutcomeUnknown(
                f"chio: call {request_id}: outcome unknown, it may have run "
                f"(retry with the same request_id or await it): {e}",
                request_id=request_id,
            ) from e
        if isinstance(result, PendingApproval) and result.deadline is None:
            # A replayed outcome (an idempotent retry) does not carry the
            # deadline: read it from the request. Best effort; the id is
            # what matters and the caller has it.
            try:
                lookup = self.approval(result.approval_request_id)
                req = await (lookup if deadline is None else asyncio.wait_for(lookup, max(0.0, deadline - loop.time())))
                dl = req.get("expires_at")
                result = dataclasses.replace(
                    result,
                    deadline=datetime.fromtimestamp(dl, timezone.utc) if isinstance(dl, int) else None,
                    summary=result.summary or req.get("summary", ""),
                )
            except (ChioError, TimeoutError, OverflowError, ValueError, OSError):
                pass  # OverflowError, ValueError, OSError: an expiry no datetime holds
        return result

    @staticmethod
    def _call_timed_out(request_id: str, timeout: float | None, lost: bool) -> ChioError:
        """call_tool's error when its timeout passed: OutcomeUnknown if some
        attempt may have reached chiod without its answer reaching us, else
        NotSent (every attempt failed before its connection was ready, or
        was turned away by chiod)."""
        err: OutcomeUnknown | NotSent
        if lost:
            err = OutcomeUnknown(
                f"chio: call {request_id}: outcome unknown, it may have run "
                f"(retry with the same request_id or await it): the timeout ({timeout} s) passed",
                request_id=request_id,
            )
        else:
            err = NotSent(
                f"chio: call {request_id} was not sent, it did not run: the timeout ({timeout} s) passed "
                "before any attempt reached chiod",
                request_id=request_id,
            )
        # Marks the timeout, not a refusal, as the end: _hitl reports it as
        # TimedOut (with this error as its cause).
        setattr(err, "_timeout_passed", True)
        return err

    async def _post_call(self, request_id: str, body: bytes, attempt: _http.Attempt) -> dict:
        try:
            try:
                status, state = await self._send(
                    "POST", "/v1/calls", body, {"Idempotency-Key": request_id}, ok=(200, 202, 403), attempt=attempt
                )
            except ChioError as e:
                if e.status is None or not 200 <= e.status < 300:
                    raise
                # A success chiod never answers a call with (201, 204, …: a
                # proxy's, a newer server's): the request went through and
                # the call may have run. An unreadable answer, never "it
                # failed" or "it was not sent", whatever its body says.
                raise BadAnswer(
                    f"chio: bad response from chiod ({e.status}): a status chiod never answers a call with", status=e.status
                ) from e
            if not isinstance(state, dict):
                raise BadAnswer(f"chio: bad response from chiod ({status}): not an object", status=status)
            # An envelope that claims an error and names none ("", 7, []) is
            # neither an error nor an outcome: unreadable, as in Go and
            # TypeScript (testdata/sdk/call_outcomes.json). null is absent.
            code = state.get("error")
            if code is not None and not (isinstance(code, str) and code):
                raise BadAnswer(f"chio: bad response from chiod ({status}): an error envelope naming no error", status=status)
            if not code:
                _check_names(state, request_id, status)
        except BadAnswer as e:
            # chiod (or a proxy after it) answered and the answer cannot be
            # read: the call may have been decided and run. Not retried (the
            # same answer would come back); call_tool raises it as is.
            raise OutcomeUnknown(
                f"chio: call {request_id}: outcome unknown, it may have run "
                f"(retry with the same request_id or await it): {e}",
                status=e.status,
                request_id=request_id,
            ) from e
        if state.get("error"):  # a 403 that is an error envelope, not a denial
            raise api_error(status, state.get("error"), str(state.get("message", "")))
        return state

    async def status(self, id: str) -> Result:
        """Read a call's state once, without waiting: Allowed, ToolDenied, or
        PendingApproval while a human decides, or with ``running`` True
        while the allowed (or approved) tool runs — then with
        approval_request_id "" if no human was involved.
        await_approval(result.request_id) finishes the wait in every case.
        id is a request id or an approval id (ar-…)."""
        rid = await self._request_id_of(id, None)
        return from_state(await self._get_call(rid, 0))

    # --- waiting ----------------------------------------------------------

    async def await_approval(self, id: str, timeout: float | None = None) -> Allowed | ToolDenied:
        """Wait until the call named by id (an approval id "ar-…" or a request
        id) is allowed and executed, denied or cancelled, and return how it
        ended; a denial is a ToolDenied, not an exception.

        Only the id and the same agent key (or a bearer) are needed: the
        process that made the call may be gone. A call that already ended
        answers at once with its stored output. Reconnects through network
        errors and chiod restarts; timeout (seconds, None = no limit) passing
        raises TimedOut naming the call (request_id), which may still be
        pending.
        """
        _check_timeout(timeout)
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        rid = await self._request_id_of(id, deadline)
        status = "unresolved"
        backoff = RECONNECT_FIRST
        while True:
            wait = LONG_POLL if deadline is None else min(LONG_POLL, deadline - loop.time())
            if wait <= 0:
                raise TimedOut(f"chio: await {id}: timed out (still {status})", request_id=rid)
            started = loop.time()
            try:
                state = await self._retrying(lambda: self._get_call(rid, wait), deadline, f"await {id} (still {status})")
            except TimedOut as e:
                # The call may still be pending: name it, so a caller who let
                # the SDK choose its id (confirm, ask) can await or cancel it.
                if e.request_id is None:
                    e.request_id = rid
                raise
            status = state.get("status", "")
            if status in _FINAL:
                result = from_state(state)
                assert not isinstance(result, PendingApproval)
                return result
            if status not in ("pending_approval", "dispatching"):
                # Neither ended nor waiting: an answer chiod never sends.
                # Fail closed at once rather than poll it again in a loop.
                raise ChioError(f"chio: await {id}: unknown status {status!r} from chiod")
            if loop.time() - started < wait / 2:
                # Still pending, answered well before the wait passed (a
                # proxy that drops ?wait=, a chiod shutting down): pause as
                # after a failure, rather than poll again in a tight loop.
                pause = backoff if deadline is None else min(backoff, deadline - loop.time())
                if pause > 0:
                    await asyncio.sleep(pause)
                backoff = min(2 * backoff, RECONNECT_MAX)
            else:
                backoff = RECONNECT_FIRST

    async def resume_with_approval(
        self,
        approval_token: bytes | str | Mapping | Awaitable[bytes | str | Mapping],
        *,
        approval_request_id: str | None = None,
        timeout: float | None = None,
    ) -> Allowed | ToolDenied:
        """Present a signed approval token obtained out of band (from a
        channel, a workflow engine) and wait for the call, as await_approval.

        approval_token is the token's JSON (bytes, str, or the parsed
        object), or an awaitable that yields it: a future your channel
        integration resolves when the approver's token comes back. The
        token names its approval request; approval_request_id, if given,
        must agree. A token already presented (or a request already
        resolved) is not an error here: the wait reports how the call ended.
        """
        _check_timeout(timeout)
        if inspect.isawaitable(approval_token):
            approval_token = await approval_token
        raw, token = _token_bytes(approval_token)
        aid = token.get("request_id")
        if not isinstance(aid, str) or not aid.startswith("ar-"):
            raise BadRequest("chio: the token's request_id is not an approval id (ar-…)")
        _check_id(aid, approval=True)
        if approval_request_id is not None and approval_request_id != aid:
            raise BadRequest(f"chio: the token is for {aid}, not {approval_request_id}")
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        try:
            await self._retrying(lambda: self.respond(aid, raw), deadline, f"respond {aid}")
        except (Conflict, VoteRecorded):
            # After a retry, our own token consumed by the attempt whose
            # answer was lost; otherwise someone decided first. VoteRecorded:
            # our vote is recorded, the call not finished yet (recovery
            # finishes it). Either way the call's state is the answer.
            pass
        remaining = None if deadline is None else max(0.0, deadline - loop.time())
        return await self.await_approval(aid, remaining)

    # --- asking a human mid-run --------------------------------------------

    async def confirm(
        self,
        prompt: str,
        details: Any = None,
        *,
        server: str = DEFAULT_HITL_SERVER,
        request_id: str | None = None,
        timeout: float | None = None,
    ) -> bool:
        """Ask a human a yes/no question and wait: True when approved, False
        when a human said no. The approval's deadline (or timeout) passing
        raises TimedOut; a policy guard denying the verb, DeniedByPolicy; a
        withdrawn (cancelled) request, Cancelled. A timeout that passed
        before chiod answered the call is a TimedOut naming its
        ``request_id`` whose ``__cause__`` says whether it was sent:
        NotSent (no human was asked; asking again is safe) or
        OutcomeUnknown (it may be waiting for a human).
        request_id names the checkpoint: a restarted run asking again with
        the same id gets the first answer instead of asking twice."""
        args: dict[str, Any] = {"prompt": prompt}
        if details is not None:
            args["details"] = details
        res = await self._hitl("confirm", args, server, request_id, timeout)
        if isinstance(res, ToolDenied) and res.guard == "human-approval":
            return False
        _hitl_denial(res)
        out = res.output
        if not isinstance(out, dict) or out.get("confirmed") is not True:
            raise ChioError(f"chio: confirm {res.request_id}: unexpected output {out!r}")
        return True

    async def ask(
        self,
        prompt: str,
        questions: Sequence[Mapping[str, Any]],
        *,
        server: str = DEFAULT_HITL_SERVER,
        request_id: str | None = None,
        timeout: float | None = None,
    ) -> dict[str, list[str]]:
        """Put a small form to a human and wait for the signed answers.

        questions: [{"id", "text", "type": "text"|"single"|"multi",
        "options": [...], "allow_other": bool}]. Every answer comes back as
        a list (one element for text and single). A human declining raises
        Declined; the deadline, TimedOut (its ``__cause__`` NotSent or
        OutcomeUnknown when the timeout passed before chiod answered, as for
        confirm); a policy guard, DeniedByPolicy; a withdrawn (cancelled)
        request, Cancelled."""
        args: dict[str, Any] = {"questions": [dict(q) for q in questions]}
        if prompt:
            args["prompt"] = prompt
        res = await self._hitl("ask", args, server, request_id, timeout)
        if isinstance(res, ToolDenied) and res.guard == "human-approval":
            raise Declined(f"chio: ask {res.request_id}: declined: {res.reason}")
        _hitl_denial(res)
        answers = res.output.get("answers") if isinstance(res.output, dict) else None
        if not isinstance(answers, dict):
            raise ChioError(f"chio: ask {res.request_id}: unexpected output {res.output!r}")
        out: dict[str, list[str]] = {}
        for qid, v in answers.items():
            if isinstance(v, str):
                out[qid] = [v]
            elif isinstance(v, list) and all(isinstance(x, str) for x in v):
                out[qid] = list(v)
            else:
                raise ChioError(f"chio: ask {res.request_id}: answer to {qid!r} is {v!r}")
        return out

    async def _hitl(self, tool, args, server, request_id, timeout) -> Allowed | ToolDenied:
        _check_timeout(timeout)
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        try:
            r = await self.call_tool(server, tool, args, request_id=request_id, timeout=timeout)
        except (NotSent, OutcomeUnknown) as e:
            # The timeout passing is TimedOut, as in Go and TypeScript; its
            # cause (NotSent or OutcomeUnknown, as TypeScript's) says
            # whether the question can have reached chiod.
            if not getattr(e, "_timeout_passed", False) and (deadline is None or loop.time() < deadline):
                raise
            if isinstance(e, NotSent):
                sent = "it was not sent, so no human was asked; asking again is safe"
            else:
                sent = "it may have reached chiod and be waiting for a human: await_approval(request_id) or ask again with the same request_id"
            raise TimedOut(f"chio: {tool} {e.request_id}: timed out before chiod answered; {sent}", request_id=e.request_id) from e
        if isinstance(r, PendingApproval):
            remaining = None if deadline is None else max(0.0, deadline - loop.time())
            return await self.await_approval(r.request_id, remaining)
        return r

    # --- plumbing ---------------------------------------------------------

    async def _request_id_of(self, id: str, deadline: float | None) -> str:
        """Map an approval id to its parked call's request id."""
        if not isinstance(id, str) or not id:
            raise BadRequest("chio: empty id")
        _check_id(id, approval=False)
        if not id.startswith("ar-"):
            return id
        req = await self._retrying(lambda: self.approval(id), deadline, f"await {id}")
        rid = req.get("request_id")
        if not isinstance(rid, str) or not rid:
            raise ChioError(f"chio: approval {id} names no call")
        return rid

    async def _get_call(self, request_id: str, wait: float) -> dict:
        """One GET /v1/calls/{id}, long-polling for wait seconds."""
        path = "/v1/calls/" + _path(request_id)
        if wait > 0:
            path += f"?wait={int(wait * 1000)}ms"
        status, state = await self._send("GET", path, None, self._read_auth(request_id), timeout=wait + POLL_MARGIN)
        if not isinstance(state, dict):
            raise ChioError("chio: bad response from chiod: not an object")
        _check_names(state, request_id, status)
        return state

    async def _retrying(self, fn: Callable[[], Awaitable[T]], deadline: float | None, what: str) -> T:
        """fn() until it succeeds, fails in a way asking again will not
        change, or the deadline passes (TimedOut). Only reads and token
        presentation, which the kernel makes single-use, come through here."""
        loop = asyncio.get_running_loop()
        backoff = RECONNECT_FIRST
        while True:
            try:
                if deadline is None:
                    return await fn()
                remaining = deadline - loop.time()
                if remaining <= 0:
                    raise TimedOut(f"chio: {what}: timed out")
                return await asyncio.wait_for(fn(), remaining)
            except TimeoutError:
                raise TimedOut(f"chio: {what}: timed out") from None
            except ChioError as e:
                if not retryable(e):
                    raise
                # Ask again no sooner than chiod's Retry-After; if it said
                # a time past the deadline, its refusal is the answer now.
                pause = max(backoff, e.retry_after)
                if deadline is not None and loop.time() + pause >= deadline:
                    if e.retry_after > backoff:
                        raise
                    raise TimedOut(f"chio: {what}: timed out; last error: {e}") from e
            await asyncio.sleep(pause)
            backoff = min(2 * backoff, RECONNECT_MAX)

    def _read_auth(self, id: str) -> dict[str, str]:
        """Authorize a read of id: the bearer if set, and a Chio-Proof by
        the agent key if set (chiod uses the bearer first)."""
        h: dict[str, str] = {}
        if self._bearer:
            h["Authorization"] = "Bearer " + self._bearer
        if self._key is not None:
            h[STATUS_PROOF_HEADER] = status_proof(self._key, id)
        if not h:
            raise Unauthorized(f"chio: reading {id} needs the agent key (key=) or a bearer (bearer=)")
        return h

    async def _send(
        self,
        method: str,
        path: str,
        body: bytes | None,
        headers: dict[str, str],
        ok: tuple[int, ...] = (200,),
        timeout: float = REQUEST_TIMEOUT,
        attempt: _http.Attempt | None = None,
    ) -> tuple[int, Any]:
        """One request. Statuses in ok return (status, parsed JSON); any
        other status raises the error chiod's envelope names. attempt, when
        given, is how the caller gives the request up (see _http.Attempt)."""
        hdr = {"Accept": "application/json", "User-Agent": _USER_AGENT, **headers}
        if body is not None:
            hdr["Content-Type"] = "application/json"
        answer = await _http.in_thread(
            _http.request, method, self._base + path, body, hdr, timeout, self._connect_timeout, attempt
        )
        status, data = answer
        retry_after = parse_retry_after(answer.retry_after)
        if status in ok:
            return status, _parse_response(data, status)
        try:
            # One that can be read two ways is not chiod's envelope.
            env = _loads_envelope(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            env = None
        if isinstance(env, dict) and isinstance(env.get("error"), str):
            raise api_error(status, env["error"], str(env.get("message", "")), retry_after)
        text = data.decode("utf-8", "replace").strip()
        raise api_error(status, None, text[:200] or "no body", retry_after)
