"""Client's side of waiting for a call: read its state once (status), wait
until it ends through network errors and chiod restarts (await_approval),
present a token obtained out of band and wait (resume_with_approval).
Client inherits these; they use its transport (_send), its read proof
(_read_auth) and its approval reads and responses (_Approvals).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Awaitable, Callable, TypeVar

from ._wire import _check_id, _check_timeout, _path, _token_bytes
from .errors import BadAnswer, BadRequest, ChioError, Conflict, TimedOut, VoteRecorded, retryable
from .results import Allowed, PendingApproval, Result, ToolDenied, from_state


# Waiting: one long-poll (chiod caps it at 60 s), the margin by which one
# request may outlive it before the connection is presumed dead, and the
# reconnect pacing through network errors and chiod restarts.
LONG_POLL = 30.0
POLL_MARGIN = 15.0
RECONNECT_FIRST = 0.25
RECONNECT_MAX = 5.0

_FINAL = ("allowed", "denied", "cancelled")

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


class _Waiting:
    if TYPE_CHECKING:  # provided by Client
        async def _send(
            self, method: str, path: str, body: bytes | None, headers: dict[str, str], timeout: float = ...
        ) -> tuple[int, Any]: ...

        def _read_auth(self, id: str) -> dict[str, str]: ...

        async def approval(self, id: str) -> dict: ...

        async def respond(self, approval_id: str, token: bytes | str | Mapping, *, channel: str | None = None) -> dict: ...

    async def status(self, id: str) -> Result:
        """Read a call's state once, without waiting: Allowed, ToolDenied, or
        PendingApproval while a human decides, or with ``running`` True
        while the allowed (or approved) tool runs — then with
        approval_request_id "" if no human was involved.
        await_approval(result.request_id) finishes the wait in every case.
        id is a request id or an approval id (ar-…)."""
        rid = await self._request_id_of(id, None)
        return from_state(await self._get_call(rid, 0))


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
