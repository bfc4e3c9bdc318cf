"""The asyncio client: one agent talking to one chiod (SPEC §6).

The Go SDK (sdk/) is the reference; this mirrors its behaviour: signed call
proofs, retries with the same request id, waiting across agent and chiod
restarts (and waiting out a call still in flight), Chio-Proof reads,
cancelling a parked call, resume with a token, confirm and ask.

Client is this module's calling of tools and its transport, with three
parts it inherits: _approvals (read, answer, cancel, list approval
requests), _waiting (status, await_approval, resume_with_approval) and
_asking (confirm, ask).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
import urllib.parse
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from . import _http
from ._approvals import _Approvals
from ._asking import _Asking
from ._waiting import _check_names, _Waiting
from ._wire import (
    ID_RULE,
    MAX_CAPABILITY_BYTES,
    _check_timeout,
    _json_object,
    _loads_envelope,
    _parse_capability,
    _parse_response,
    _read_file,
)
from .canon import RawJSON, canonicalize
from .errors import (
    BadAnswer,
    BadRequest,
    ChioError,
    Conflict,
    NotSent,
    OutcomeUnknown,
    TimedOut,
    Unauthorized,
    api_error,
    parse_retry_after,
    retryable,
)
from .keys import PrivateKey
from .results import Allowed, PendingApproval, Result, ToolDenied, from_state
from .signing import STATUS_PROOF_HEADER, call_proof, new_id, parameter_hash, status_proof

DEFAULT_URL = "http://127.0.0.1:7420"

# Retry policy for POST /v1/calls. A retry re-sends the same request id, so
# it can never run a tool twice; it is still bounded, because a chiod that
# keeps failing should surface as an error, not a hang.
CALL_ATTEMPTS = 4
CALL_FIRST_BACKOFF = 0.25
# A proof older than this is re-signed before a retry (chiod refuses proofs
# more than 60 s old); the id and content, which chiod deduplicates on, stay.
PROOF_REFRESH = 30.0

# Any request but a long-poll (see _waiting for the waiting pacing).
REQUEST_TIMEOUT = 60.0
# Making a connection: the TCP connect and, for https, the TLS handshake.
# The same steps and default as the Go SDK (DefaultConnectTimeout) and the
# TypeScript SDK (undici's connect timeout). No byte of a request is
# written before its connection is ready, so a call whose every attempt
# ran out of connect time is NotSent.
CONNECT_TIMEOUT = 10.0

# A request id chiod takes: 1..128 characters of [A-Za-z0-9._:-], not "."
# or ".." (checked apart).
_REQUEST_ID = ID_RULE
_USER_AGENT = "chio-python/0.1"
# The HTTP status chiod answers each call outcome with.
_CALL_HTTP_STATUS = {
    "allowed": 200,
    "pending_approval": 202,
    "dispatching": 202,
    "denied": 403,
    "cancelled": 403,
}


class Client(_Approvals, _Waiting, _Asking):
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
                said = state.get("status")
                if not isinstance(said, str) or _CALL_HTTP_STATUS.get(said) != status:
                    # Not chiod's answer (a 200 saying "denied", a 403
                    # saying "allowed": a proxy rewrote the status): neither
                    # a decision nor a success, so the call may have run (as
                    # chio call and the Go and TypeScript SDKs).
                    raise BadAnswer(
                        f"chio: bad response from chiod ({status}): call status {str(said)[:40]!r}, "
                        "which chiod answers with another HTTP status",
                        status=status,
                    )
                if said == "pending_approval" and not state.get("approval_request_id"):
                    # chiod parks a call under an approval id: a pending
                    # answer without one is not chiod's (as chio call reads it).
                    raise BadAnswer(f"chio: bad response from chiod ({status}): a pending answer without an approval id", status=status)
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
