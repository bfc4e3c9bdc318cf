"""SyncClient: the same client for code without an event loop.

Each method runs the asyncio client's coroutine to completion with
asyncio.run, so both share one implementation. Do not call it from inside a
running event loop; there, await Client's methods instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from .canon import RawJSON
from ._asking import DEFAULT_HITL_SERVER
from .client import Client
from .results import Allowed, Result, ToolDenied


class SyncClient:
    """Blocking twin of Client: same constructor, same methods, same results
    and exceptions."""

    def __init__(self, *args: Any, **kwargs: Any):
        self._client = kwargs.pop("_client", None) or Client(*args, **kwargs)

    @classmethod
    def from_env(cls, **overrides: Any) -> "SyncClient":
        """As Client.from_env (CHIO_URL, CHIO_KEY, CHIO_CAPABILITY)."""
        return cls(_client=Client.from_env(**overrides))

    @property
    def public_key(self) -> str:
        return self._client.public_key

    @staticmethod
    def _run(coro):
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(coro)
        coro.close()
        raise RuntimeError("chio: SyncClient called inside a running event loop; await chio.Client instead")

    def call_tool(
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
        return self._run(
            self._client.call_tool(
                server, tool, arguments, governed_intent, operation=operation, request_id=request_id, timeout=timeout
            )
        )

    def status(self, id: str) -> Result:
        return self._run(self._client.status(id))

    def await_approval(self, id: str, timeout: float | None = None) -> Allowed | ToolDenied:
        return self._run(self._client.await_approval(id, timeout))

    def cancel(self, approval_id: str, reason: str) -> ToolDenied:
        return self._run(self._client.cancel(approval_id, reason))

    def resume_with_approval(
        self, approval_token: bytes | str | Mapping, *, approval_request_id: str | None = None, timeout: float | None = None
    ) -> Allowed | ToolDenied:
        return self._run(
            self._client.resume_with_approval(approval_token, approval_request_id=approval_request_id, timeout=timeout)
        )

    def confirm(self, prompt: str, details: Any = None, *, server: str = DEFAULT_HITL_SERVER,
                request_id: str | None = None, timeout: float | None = None) -> bool:
        return self._run(self._client.confirm(prompt, details, server=server, request_id=request_id, timeout=timeout))

    def ask(self, prompt: str, questions: Sequence[Mapping[str, Any]], *, server: str = DEFAULT_HITL_SERVER,
            request_id: str | None = None, timeout: float | None = None) -> dict[str, list[str]]:
        return self._run(self._client.ask(prompt, questions, server=server, request_id=request_id, timeout=timeout))

    def approval(self, id: str) -> dict:
        return self._run(self._client.approval(id))

    def respond(self, approval_id: str, token: bytes | str | Mapping, *, channel: str | None = None) -> dict:
        return self._run(self._client.respond(approval_id, token, channel=channel))

    def pending(self) -> list[dict]:
        return self._run(self._client.pending())
