"""What an agent and an approver sign (SPEC §2, §3; the Chio-Proof read and
cancel headers from docs/ARCHITECTURE.md). testdata/vectors pins every byte of it.

Every signature is Ed25519 over DOMAIN || 0x00 || JCS(object without
"signature"). The functions here build exactly those bytes; nothing signed
is ever re-serialized afterwards.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Mapping
from typing import Any

from .canon import canonicalize
from .errors import BadRequest
from .keys import PrivateKey

CALL_PROOF_DOMAIN = "chio.call.v1"
STATUS_PROOF_DOMAIN = "chio.call-status.v1"
CANCEL_PROOF_DOMAIN = "chio.cancel.v1"
STATUS_PROOF_HEADER = "Chio-Proof"

_MAX_SAFE = 2**53


def message(domain: str, canonical: bytes) -> bytes:
    """The exact byte string that is signed under domain."""
    return domain.encode("utf-8") + b"\x00" + canonical


def parameter_hash(server: str, tool: str, arguments: Any, governed_intent: Any) -> str:
    """SHA-256 hex of JCS({server_id, tool_name, arguments, governed_intent}),
    governed_intent None when absent: what an approval binds to."""
    pre = canonicalize(
        {"server_id": server, "tool_name": tool, "arguments": arguments, "governed_intent": governed_intent}
    )
    return hashlib.sha256(pre).hexdigest()


def call_proof(
    key: PrivateKey,
    *,
    request_id: str,
    capability_id: str,
    server: str,
    tool: str,
    parameter_hash: str,
    issued_at: int,
) -> dict:
    """The call's proof member, {issued_at, signature}."""
    _check_time(issued_at)
    payload = canonicalize(
        {
            "request_id": request_id,
            "capability_id": capability_id,
            "server": server,
            "tool": tool,
            "parameter_hash": parameter_hash,
            "issued_at": issued_at,
        }
    )
    return {"issued_at": issued_at, "signature": key.sign(message(CALL_PROOF_DOMAIN, payload)).hex()}


def status_proof(key: PrivateKey, id: str, issued_at: int | None = None) -> str:
    """The Chio-Proof header with which an agent reads its own call or
    approval: "<issued_at>.<hex signature>" over JCS({request_id, issued_at})."""
    if issued_at is None:
        issued_at = int(time.time())
    _check_time(issued_at)
    if issued_at < 0:
        raise BadRequest("chio: issued_at must not be negative")
    payload = canonicalize({"request_id": id, "issued_at": issued_at})
    return f"{issued_at}.{key.sign(message(STATUS_PROOF_DOMAIN, payload)).hex()}"


def cancel_proof(key: PrivateKey, approval_id: str, reason: str, issued_at: int | None = None) -> str:
    """The Chio-Proof header with which an agent cancels its own parked call:
    "<issued_at>.<hex signature>" over JCS({approval_id, issued_at, reason})
    in its own domain, so a read proof (which may be seen in logs) cannot
    cancel. reason is signed exactly as it is sent."""
    if issued_at is None:
        issued_at = int(time.time())
    _check_time(issued_at)
    if issued_at < 0:
        raise BadRequest("chio: issued_at must not be negative")
    payload = canonicalize({"approval_id": approval_id, "issued_at": issued_at, "reason": reason})
    return f"{issued_at}.{key.sign(message(CANCEL_PROOF_DOMAIN, payload)).hex()}"


def sign_object(key: PrivateKey, domain: str, obj: Mapping) -> bytes:
    """Sign obj under domain and return the canonical object with its
    "signature" member: the bytes to send, exactly as signed."""
    if "signature" in obj:
        raise BadRequest("chio: the object already has a signature member")
    if "schema" in obj and obj["schema"] != domain:
        raise BadRequest(f"chio: schema {obj['schema']!r} does not match the signature domain {domain!r}")
    payload = canonicalize(obj)
    signature = key.sign(message(domain, payload)).hex()
    # JCS of the object plus its signature is the payload with the member
    # spliced in at its sorted place.
    return canonicalize({**obj, "signature": signature})


def new_id(prefix: str) -> str:
    """prefix + a UUIDv7 (RFC 9562): time-ordered, as chiod's ids."""
    ms = time.time_ns() // 1_000_000
    b = bytearray(ms.to_bytes(6, "big") + os.urandom(10))
    b[6] = 0x70 | (b[6] & 0x0F)  # version 7
    b[8] = 0x80 | (b[8] & 0x3F)  # variant 10
    h = b.hex()
    return f"{prefix}{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _check_time(t: int) -> None:
    if not isinstance(t, int) or isinstance(t, bool) or abs(t) > _MAX_SAFE:
        raise BadRequest("chio: a time must be integer unix seconds")
