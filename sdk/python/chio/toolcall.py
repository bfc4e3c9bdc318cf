"""For tool servers behind chio: tell chio's calls from anyone else's.

chiod signs every call it sends to an http tool server with its kernel key
(docs/platform.md, "Only chio's calls should run"):

    X-Chio-Server:    the [[servers]] id the call was routed to
    X-Chio-Sent-At:   unix milliseconds on chiod's clock (per attempt), as
        the decimal signed: no "+", leading zero or space, not "-0"
    X-Chio-Signature: 128 lowercase hex = Ed25519(kernel key,
        "chio.tool-call.v1" || 0x00 || server || "\\n" || sent_at || "\\n" || hex(SHA-256(body)))

A tool server that anything but chiod can reach calls verify_tool_call on
every request, with the exact body bytes, before it runs anything: a call
that did not come through chio skipped every guard, approval and receipt.
testdata/vectors/tool_call.json pins the format (Go's toolserver.Verifier
is the same check).
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Mapping

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from .errors import Unauthorized
from .keys import public_key_bytes

TOOL_CALL_DOMAIN = "chio.tool-call.v1"
SERVER_HEADER = "X-Chio-Server"
SENT_AT_HEADER = "X-Chio-Sent-At"
SIGNATURE_HEADER = "X-Chio-Signature"
#: chiod sends the call's request id (the body's request_id) as this header
IDEMPOTENCY_KEY_HEADER = "Idempotency-Key"
#: how far X-Chio-Sent-At may be from the tool server's clock, either way
DEFAULT_MAX_AGE = 300.0
#: chio's arguments are at most 256 KiB; read no more than this of a body
MAX_CALL_BODY = 1 << 20


def tool_call_message(server: str, sent_at_ms: int, body: bytes) -> bytes:
    """What the kernel signs (after the domain and a 0x00 byte)."""
    return f"{server}\n{sent_at_ms}\n{hashlib.sha256(body).hexdigest()}".encode()


def _header(headers: Mapping[str, str], name: str) -> str:
    for k, v in headers.items():  # header names are case-insensitive
        if k.lower() == name.lower():
            return v
    return ""


def verify_tool_call(
    headers: Mapping[str, str],
    body: bytes,
    kernel_key: str,
    server_id: str,
    *,
    now: float | None = None,
    max_age: float = DEFAULT_MAX_AGE,
) -> None:
    """Raise Unauthorized unless chio's kernel (kernel_key, "ed25519:<hex>",
    as chiod's GET /healthz names it) sent this call to server_id (this
    server's [[servers]] id) within max_age seconds of now. body is the
    request body exactly as received; its Idempotency-Key header must be the
    body's request_id. A call repeated within max_age is the same call (same
    Idempotency-Key): deduplicate it. A kernel_key, server_id, max_age (a
    positive, finite number of seconds) or now (a finite unix time in
    seconds) that is not one is ValueError."""
    if not isinstance(body, (bytes, bytearray)) or len(body) > MAX_CALL_BODY:
        raise Unauthorized(f"chio: a call body is bytes of at most {MAX_CALL_BODY}")
    try:
        raw_key = public_key_bytes(kernel_key)
    except ValueError as e:
        raise ValueError(f"chio: kernel_key {e}") from None
    if not server_id:
        raise ValueError("chio: server_id is required")
    # A NaN compares false with every age, and an infinity is no bound:
    # either would turn the freshness check off.
    if isinstance(max_age, bool) or not isinstance(max_age, (int, float)) or not 0 < max_age < math.inf:
        raise ValueError(f"chio: max_age {max_age!r} must be a positive number of seconds")
    # So would a NaN clock (every skew compares false); an infinite one is
    # no time either. A caller's error, never a call refused or let through.
    if now is not None and (isinstance(now, bool) or not isinstance(now, (int, float)) or not math.isfinite(now)):
        raise ValueError(f"chio: now {now!r} must be a finite unix time in seconds")
    pub = Ed25519PublicKey.from_public_bytes(raw_key)
    got = _header(headers, SERVER_HEADER)
    if got != server_id:
        raise Unauthorized(f"chio: not a call chio sent to this tool server: {SERVER_HEADER} is {got[:64]!r}, want {server_id!r}")
    sent = _header(headers, SENT_AT_HEADER)
    # At most one leading minus: lstrip("-") let "--1" through to int(),
    # which raised ValueError instead of refusing.
    # At most 19 digits, as Go's ParseInt (int64): int() of thousands
    # raised ValueError (its digit limit) instead of refusing.
    # Exactly the decimal chiod signs (Go's FormatInt), as Go and
    # TypeScript: not "05" or "-0" (testdata/sdk/tool_call_sent_at.json).
    digits = sent.removeprefix("-")
    if (
        not sent.isascii()
        or not digits.isdigit()
        or len(digits) > 19
        or str(int(sent)) != sent
        or not -(2**63) <= int(sent) < 2**63
    ):
        raise Unauthorized(f"chio: not a call chio sent to this tool server: {SENT_AT_HEADER} must be unix milliseconds")
    sent_at = int(sent)
    sig_hex = _header(headers, SIGNATURE_HEADER)
    if len(sig_hex) != 128 or sig_hex.lower() != sig_hex or not all(c in "0123456789abcdef" for c in sig_hex):
        raise Unauthorized(f"chio: not a call chio sent to this tool server: {SIGNATURE_HEADER} must be 128 lowercase hex digits")
    msg = TOOL_CALL_DOMAIN.encode() + b"\x00" + tool_call_message(server_id, sent_at, bytes(body))
    try:
        pub.verify(bytes.fromhex(sig_hex), msg)
    except InvalidSignature:
        raise Unauthorized(f"chio: not a call chio sent to this tool server: the signature does not verify under {kernel_key}") from None
    # The signature covers the body, not the Idempotency-Key header a
    # deduplicating server keys on: a captured call re-sent within max_age
    # under another key would run again. chiod sends the call's request id
    # as both, so the key must be the body's signed request_id.
    try:
        call = json.loads(bytes(body))
    except ValueError:
        call = None
    request_id = call.get("request_id") if isinstance(call, dict) else None
    if not isinstance(request_id, str):
        raise Unauthorized("chio: not a call chio sent to this tool server: the body is not a call with a request_id")
    key = _header(headers, IDEMPOTENCY_KEY_HEADER)
    if key != request_id:
        raise Unauthorized(
            f"chio: not a call chio sent to this tool server: {IDEMPOTENCY_KEY_HEADER} is {key[:64]!r}, not the signed request_id {request_id[:64]!r}"
        )
    # Freshness after the signature: an unsigned time says nothing.
    skew = (time.time() if now is None else now) - sent_at / 1000
    if abs(skew) > max_age:
        raise Unauthorized(f"chio: not a call chio sent to this tool server: sent {skew:.0f}s from this server's clock, more than {max_age:.0f}s")
