"""What a call comes to: Allowed, PendingApproval or ToolDenied. A denial is
a result, not an exception (the seed's sketch inspects it with isinstance)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Union

from .errors import ChioError


@dataclass(frozen=True)
class Approval:
    """What the deciding human signed, when one decided."""

    approver: str  #: "ed25519:…" key
    approver_name: str  #: display name from the policy ("" if none)
    note: str  #: the approver's signed note
    amended_arguments: Any  #: the edited arguments, when a human approved an amended call
    #: whether the human amended the call: check this, not whether
    #: amended_arguments is truthy (an amendment to ``{}`` is falsy)
    amended: bool = False


#: What became of an allowed call at its tool (Allowed.execution).
EXECUTION_SUCCEEDED = "succeeded"
EXECUTION_TOOL_ERROR = "tool_error"  #: the tool ran and reported a failure
EXECUTION_NOT_DELIVERED = "not_delivered"  #: the tool certainly never saw the call
EXECUTION_UNKNOWN = "unknown"  #: the tool may or may not have run it


@dataclass(frozen=True)
class Allowed:
    """The call was allowed and sent to its tool. Check failed: the tool
    failed, was never reached, or its outcome is unknown (execution says
    which, tool_error says why); output means something only when it
    did not fail."""

    request_id: str
    receipt_id: str  #: the final receipt: for a failure, the "incomplete" one that records it
    output: Any  #: the tool's output, parsed JSON
    tool_error: str | None = None
    #: "succeeded", "tool_error", "not_delivered" or "unknown" (None if chiod did not say)
    execution: str | None = None
    approval_request_id: str | None = None  #: set when the call waited for a human
    approval: Approval | None = None
    status = "allowed"

    @property
    def failed(self) -> bool:
        """Whether the tool did not succeed (as the Go SDK's Allowed.Failed)."""
        return bool(self.tool_error) or self.execution not in (None, EXECUTION_SUCCEEDED)


@dataclass(frozen=True)
class PendingApproval:
    """The call has not ended yet. Usually it is parked until a human
    decides: persist request_id (or approval_request_id) and pass it to
    Client.await_approval, from this process or another.
    await_approval(request_id) works in every case, including ``running``
    without an approval_request_id.

    Client.status also reports a call that was decided and whose tool is
    still running this way, with ``running`` True: approval_request_id is
    then "" when no human was ever involved (the call was allowed
    outright), or the approval a human already granted. call_tool never
    returns one without an approval_request_id: it waits for such a call's
    outcome."""

    request_id: str
    approval_request_id: str  #: "" when running and no human was involved
    deadline: datetime | None  #: UTC; None if chiod did not say
    summary: str  #: what the approver is shown
    receipt_id: str  #: the "incomplete" receipt
    #: decided (allowed, or approved) and the tool is running; no human
    #: decision is awaited. await_approval(request_id) returns its outcome.
    running: bool = False
    status = "pending_approval"


@dataclass(frozen=True)
class ToolDenied:
    """A guard, a human or a deadline said no (status "denied"), or the call
    was cancelled (status "cancelled")."""

    request_id: str
    receipt_id: str
    reason: str
    guard: str  #: e.g. "capability-scope", "human-approval", "approval-timeout"
    status: str = "denied"
    approval_request_id: str | None = None
    approval: Approval | None = None


Result = Union[Allowed, PendingApproval, ToolDenied]


def from_state(st: dict) -> Result:
    """Map chiod's call state (POST /v1/calls, GET /v1/calls/{id}) to a
    result. An unknown status, or a member of the wrong type, is an error:
    failing closed, it is never mistaken for an allow."""
    _check_types(st)
    status = st.get("status")
    rid = _str(st, "request_id")
    if status == "allowed":
        return Allowed(
            request_id=rid,
            receipt_id=_str(st, "receipt_id"),
            output=st.get("output"),
            tool_error=st.get("tool_error") or None,
            execution=_str(st, "execution") or None,
            approval_request_id=st.get("approval_request_id") or None,
            approval=_approval(st.get("approval")),
        )
    if status in ("pending_approval", "dispatching"):
        # Dispatching: allowed or approved, the tool is running; nothing to
        # show yet. With no approval id no human is involved: running says
        # so, and await_approval(request_id) works either way.
        # (Client.call_tool waits out one that never waited for a human
        # rather than report it.)
        dl = st.get("deadline")
        return PendingApproval(
            request_id=rid,
            approval_request_id=_str(st, "approval_request_id"),
            deadline=datetime.fromtimestamp(dl, timezone.utc) if isinstance(dl, int) and dl > 0 else None,
            summary=_str(st, "summary"),
            receipt_id=_str(st, "receipt_id"),
            running=status == "dispatching",
        )
    if status in ("denied", "cancelled"):
        return ToolDenied(
            request_id=rid,
            receipt_id=_str(st, "receipt_id"),
            reason=_str(st, "reason"),
            guard=_str(st, "guard"),
            status=status,
            approval_request_id=st.get("approval_request_id") or None,
            approval=_approval(st.get("approval")),
        )
    raise ChioError(f"chio: call {rid}: unknown status {status!r} from chiod")


# The members chiod sends as strings (null is "not said"). One of another
# type cannot be read: as the Go SDK's typed decode, it is refused, never
# taken as absent. A tool_error of false or an execution of 3 read as absent
# would make a failed call, or one whose outcome is unknown, a success.
_STRINGS = ("status", "request_id", "receipt_id", "tool_error", "execution", "reason", "guard", "approval_request_id", "summary")
_APPROVAL_STRINGS = ("approver", "approver_display_name", "note")


def _check_types(st: dict) -> None:
    """Refuse a call state whose members do not have chiod's types."""
    bad = [k for k in _STRINGS if st.get(k) is not None and not isinstance(st[k], str)]
    dl = st.get("deadline")
    if dl is not None and (isinstance(dl, bool) or not isinstance(dl, int)):
        bad.append("deadline")
    elif isinstance(dl, int) and dl > 0:
        try:
            datetime.fromtimestamp(dl, timezone.utc)
        except (OverflowError, ValueError, OSError):  # beyond year 9999 or time_t
            bad.append("deadline (out of range)")
    a = st.get("approval")
    if a is not None:
        if not isinstance(a, dict):
            bad.append("approval")
        else:
            bad += ["approval." + k for k in _APPROVAL_STRINGS if a.get(k) is not None and not isinstance(a[k], str)]
            if a.get("amended") is not None and not isinstance(a["amended"], bool):
                bad.append("approval.amended")
    if bad:
        rid = st.get("request_id") if isinstance(st.get("request_id"), str) else ""
        raise ChioError(f"chio: call {rid}: unreadable answer from chiod: {', '.join(bad)} not as chiod sends it")


def _str(d: dict, k: str) -> str:
    v = d.get(k)
    return v if isinstance(v, str) else ""


def _approval(a: Any) -> Approval | None:
    if not isinstance(a, dict) or not a.get("approver"):
        return None
    return Approval(
        approver=_str(a, "approver"),
        approver_name=_str(a, "approver_display_name"),
        note=_str(a, "note"),
        amended_arguments=a.get("amended_arguments"),
        # Arguments present mean an amendment whatever the flag says.
        amended=a.get("amended") is True or a.get("amended_arguments") is not None,
    )
