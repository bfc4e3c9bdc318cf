"""Client's side of approval requests: read one, present a signed token,
withdraw a parked call, list the pending ones. Client inherits these; they
use its transport (_send), its read proof (_read_auth) and its credentials.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .canon import canonicalize
from .errors import BadRequest, ChioError, Unauthorized
from .keys import PrivateKey
from .results import ToolDenied, from_state
from .signing import STATUS_PROOF_HEADER, cancel_proof
from ._wire import _check_id, _path, _token_bytes


class _Approvals:
    if TYPE_CHECKING:  # provided by Client
        _key: PrivateKey | None
        _bearer: str | None

        async def _send(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> tuple[int, Any]: ...

        def _read_auth(self, id: str) -> dict[str, str]: ...

    async def approval(self, id: str) -> dict:
        """Read one approval request (the "request" object of GET
        /approvals/{id}). An agent may read the requests that park its own
        calls; anything else needs a bearer."""
        _check_id(id, approval=True)
        _, view = await self._send("GET", "/approvals/" + _path(id), None, self._read_auth(id))
        req = view.get("request") if isinstance(view, dict) else None
        if not isinstance(req, dict):
            raise ChioError(f"chio: approval {id}: empty answer from chiod")
        if req.get("approval_id") != id:
            # Another request (a proxy or cache that served another
            # answer): it names another call, to await or sign.
            raise ChioError(f"chio: approval {id}: chiod answered with request {str(req.get('approval_id'))[:140]!r}")
        return req

    async def respond(self, approval_id: str, token: bytes | str | Mapping, *, channel: str | None = None) -> dict:
        """Present a signed approval token (the token is the credential; no
        bearer is sent). One attempt: after a transport error the token may
        or may not have been consumed; resume_with_approval or
        await_approval tells how the call ended. VoteRecorded: the vote IS
        recorded but the approved call is not finished yet; do not vote
        again (await_approval tells how it ends). VoteUncertain: the vote
        may or may not be recorded; present the same token again (a
        recorded vote is refused as a replay, Conflict) and do not ask
        another approver on the belief it did nothing."""
        _check_id(approval_id, approval=True)
        raw, _ = _token_bytes(token)
        # Assembled around the signed bytes, so that they reach chiod exactly
        # as signed.
        body = b'{"token":' + raw + (b',"channel":' + canonicalize(channel) if channel else b"") + b"}"
        _, res = await self._send("POST", "/approvals/" + _path(approval_id) + "/respond", body, {})
        return res

    async def cancel(self, approval_id: str, reason: str) -> ToolDenied:
        """Withdraw a parked call before a human decided it: the call ends
        cancelled, with a signed `cancelled` receipt, and everyone awaiting
        it gets a ToolDenied with status "cancelled" and this reason.

        With the agent key, the agent cancels (a Chio-Proof in the
        chio.cancel.v1 domain over the approval id, the time and the
        reason: a read proof cannot cancel); a client without a key but
        with bearer= an admin token cancels as an operator. An id that is
        not an approval id or an empty reason is BadRequest; a request
        already decided (or cancelled) is Conflict. One attempt: after a
        TransportError, status() or await_approval() says whether it took.
        """
        _check_id(approval_id, approval=True)
        if not isinstance(reason, str) or not reason.strip():
            raise BadRequest("chio: a cancellation needs a reason")
        body = canonicalize({"reason": reason})  # strict: a lone surrogate is refused here
        if self._key is not None:
            headers = {STATUS_PROOF_HEADER: cancel_proof(self._key, approval_id, reason)}
        elif self._bearer:
            headers = {"Authorization": "Bearer " + self._bearer}
        else:
            raise Unauthorized("chio: cancelling needs the agent key (key=) or an admin token (bearer=)")
        _, state = await self._send("POST", "/approvals/" + _path(approval_id) + "/cancel", body, headers)
        result = from_state(state) if isinstance(state, dict) else None
        # The cancelled call of this approval, not another's withdrawal.
        if not isinstance(result, ToolDenied) or result.status != "cancelled" or result.approval_request_id != approval_id:
            raise ChioError(f"chio: cancel {approval_id}: unexpected answer from chiod: {state!r}"[:300])
        return result

    async def pending(self) -> list[dict]:
        """Pending approval requests, oldest first: this agent's with a key,
        everyone's without. chiod serves the list to reader and admin tokens
        only, so this needs bearer=."""
        if not self._bearer:
            raise Unauthorized("chio: listing pending approvals needs a reader token (bearer=)")
        q = {"limit": "1000"}
        if self._key:
            q["subject_id"] = self._key.public_key
        _, res = await self._send(
            "GET", "/approvals/pending?" + urllib.parse.urlencode(q), None, {"Authorization": "Bearer " + self._bearer}
        )
        approvals = res.get("approvals") if isinstance(res, dict) else None
        return approvals if isinstance(approvals, list) else []
