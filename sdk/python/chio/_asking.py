"""Client's side of asking a human mid-run: confirm (yes or no) and ask (a
small form), each a call to the HITL server's verb that waits for the
answer. Client inherits these; they use its call_tool and await_approval.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._wire import _check_timeout, _hitl_denial
from .errors import ChioError, Declined, NotSent, OutcomeUnknown, TimedOut
from .results import Allowed, PendingApproval, Result, ToolDenied

DEFAULT_HITL_SERVER = "demo"  # the server whose confirm/ask verbs are used


class _Asking:
    if TYPE_CHECKING:  # provided by Client
        async def call_tool(
            self,
            server: str,
            tool: str,
            arguments: Any = None,
            governed_intent: Any = None,
            *,
            operation: str = "invoke",
            request_id: str | None = None,
            timeout: float | None = None,
        ) -> Result: ...

        async def await_approval(self, id: str, timeout: float | None = None) -> Allowed | ToolDenied: ...

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
