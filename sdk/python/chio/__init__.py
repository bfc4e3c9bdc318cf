"""chio: the Python SDK for agents calling tools through chiod.

    from chio import Client, PendingApproval, ToolDenied

    client = Client.from_env()   # CHIO_URL, CHIO_KEY, CHIO_CAPABILITY
    result = await client.call_tool(server=..., tool=..., arguments={...})

A call returns Allowed, PendingApproval or ToolDenied; errors (bad input,
refused credentials, lost answers) are exceptions derived from ChioError.
OutcomeUnknown (TransportError among them) means a call may have run:
retry it with the same request_id or await it, never under a new id.
NotSent (from call_tool) means chiod could not be connected to at all: the
call did not run.
VoteRecorded (from respond) means the approver's vote IS recorded: do not
vote again. VoteUncertain (from respond) means it may or may not be: present
the same token again.
SyncClient is the same client without asyncio. Standard library plus
`cryptography` (Ed25519) only.
"""

from .approver import DEFAULT_TOKEN_TTL, MAX_APPROVAL_TTL, sign_approval, sign_denial
from .canon import RawJSON, canonicalize, canonicalize_text
from .client import DEFAULT_URL, Client
from .errors import (
    ApprovalRejected,
    BadRequest,
    Cancelled,
    CanonicalJSONError,
    ChioError,
    Conflict,
    Declined,
    DeniedByPolicy,
    NotFound,
    NotSent,
    OutcomeUnknown,
    TimedOut,
    TransportError,
    Unauthorized,
    Unavailable,
    VoteRecorded,
    VoteUncertain,
)
from .keys import KeyFileModeWarning, PrivateKey
from .results import Allowed, Approval, PendingApproval, Result, ToolDenied
from .signing import parameter_hash
from .sync import SyncClient
from .toolcall import verify_tool_call

__version__ = "0.1.0"

__all__ = [
    "Allowed",
    "Approval",
    "ApprovalRejected",
    "BadRequest",
    "Cancelled",
    "CanonicalJSONError",
    "ChioError",
    "Client",
    "Conflict",
    "DEFAULT_TOKEN_TTL",
    "DEFAULT_URL",
    "Declined",
    "DeniedByPolicy",
    "MAX_APPROVAL_TTL",
    "NotFound",
    "NotSent",
    "OutcomeUnknown",
    "PendingApproval",
    "KeyFileModeWarning",
    "PrivateKey",
    "RawJSON",
    "Result",
    "SyncClient",
    "TimedOut",
    "ToolDenied",
    "TransportError",
    "Unauthorized",
    "Unavailable",
    "VoteRecorded",
    "VoteUncertain",
    "canonicalize",
    "canonicalize_text",
    "parameter_hash",
    "sign_approval",
    "sign_denial",
    "verify_tool_call",
]
