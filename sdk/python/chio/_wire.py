"""Client's helpers at the wire: chiod's answers parsed, ids put in paths,
and the caller's arguments, files, capability and tokens checked (each
meeting its size limit first) before anything is sent."""

from __future__ import annotations

import json
import math
import re
import urllib.parse
from collections.abc import Mapping
from typing import Any

from .canon import RawJSON, canonicalize, loads_strict
from .casefold import fold_key
from .errors import BadAnswer, BadRequest, Cancelled, ChioError, DeniedByPolicy, TimedOut
from .results import Allowed, ToolDenied

MAX_CAPABILITY_BYTES = 64 << 10
MAX_TOKEN_BYTES = 64 << 10  # as chiod's approval.MaxTokenBytes


class _NotJSON(ValueError):
    pass


def _no_constants(name: str) -> Any:
    raise _NotJSON(f"{name} is not JSON")


def _parse_response(data: bytes, status: int) -> Any:
    """chiod's answers are parsed as plain JSON (large integers in a tool's
    output stay exact Python ints); they are not signed or hashed here. One
    that can be read two ways (_loads_envelope) cannot be read."""
    try:
        return _loads_envelope(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise BadAnswer(f"chio: bad response from chiod ({status}): {e}", status=status) from None


# A surrogate code point in a str json.loads made: an escape no pair
# completed (a pair is one code point).
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _loads_envelope(text: str) -> Any:
    """An answer of chiod's, parsed as every chio client reads it (the Go
    SDK's internal/envelope): one whose own objects, its top level and its
    "approval", hold two member names equal or differing only in letter
    case can be read two ways (Go's encoding/json matched names in any
    case; of a duplicate, a parser keeps the first or the last) and is
    refused: chiod never sends one. The members' values (a tool's output)
    are never checked: parsed as json.loads parses them, a later duplicate
    winning. A name's lone surrogate (an escape such as \\ud800 that no
    pair completes) is compared as U+FFFD, as Go reads it."""
    alike: list[tuple[dict, str]] = []  # objects with two members named alike

    def obj(pairs: list[tuple[str, Any]]) -> dict:
        d = dict(pairs)
        seen: dict[str, str] = {}
        for name, _ in pairs:
            key = fold_key(_LONE_SURROGATE.sub("\ufffd", name))
            if key in seen:
                alike.append((d, f"{ascii(seen[key])} and {ascii(name)}"))
                break
            seen[key] = name
        return d

    value = json.loads(text, object_pairs_hook=obj, parse_constant=_no_constants)
    if isinstance(value, dict):
        own = [value, value.get("approval")]
        for d, names in alike:
            if any(d is o for o in own):
                raise _NotJSON(f"two members named alike: {names}")
    return value


# chiod's rule for request and approval ids (approval.IDRule): 1..128
# characters of [A-Za-z0-9._:-], not "." or ".." (checked apart).
ID_RULE = re.compile(r"[A-Za-z0-9._:-]{1,128}")


def _check_id(id: Any, approval: bool) -> None:
    """Refuse, before anything is sent, an id chiod would refuse (or could
    not even route: "req/1", ".."), or for approval one that is not an
    approval id (ar-…). As the Go SDK's approval.ValidID checks."""
    if not isinstance(id, str) or not ID_RULE.fullmatch(id) or id in (".", "..") or (approval and not id.startswith("ar-")):
        want = "an approval id (ar-…)" if approval else "a request id or an approval id"
        raise BadRequest(f"chio: {str(id)[:140]!r} is not {want} of 1..128 characters of [A-Za-z0-9._:-], not \".\" or \"..\"")


def _check_timeout(timeout: Any) -> None:
    """A timeout is None (no limit) or a number of seconds: not a bool, a
    string or NaN (which compares false with every bound, so a wait would
    never end, or read as already passed)."""
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or math.isnan(timeout)):
        raise BadRequest(f"chio: timeout {timeout!r} must be a number of seconds")


def _path(id: str) -> str:
    return urllib.parse.quote(id, safe="")


def _json_object(v: Any, what: str) -> Any:
    """A caller's arguments or intent: a JSON object, checked now so that a
    bad value is BadRequest before anything is sent."""
    value = v.value if isinstance(v, RawJSON) else v
    if not isinstance(value, Mapping):
        raise BadRequest(f"chio: {what} must be a JSON object")
    canonicalize(value)  # strict: raises CanonicalJSONError (a BadRequest)
    return value


def _read_file(path, limit: int, what: str) -> bytes:
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise BadRequest(f"chio: {what} file: {e}") from None
    if len(data) > limit:
        raise BadRequest(f"chio: {what} file {path} is larger than {limit} bytes")
    return data


def _parse_capability(capability: bytes | str) -> tuple[bytes, str, str]:
    """The capability exactly as issued, its id and its subject."""
    raw = (capability.encode("utf-8") if isinstance(capability, str) else bytes(capability)).strip()
    if len(raw) > MAX_CAPABILITY_BYTES:
        raise BadRequest("chio: capability larger than 64 KiB")
    cap = loads_strict(raw)
    if not isinstance(cap, dict) or not isinstance(cap.get("id"), str) or not cap["id"]:
        raise BadRequest("chio: not a capability (want a JSON object with an id)")
    return raw, cap["id"], cap.get("subject") if isinstance(cap.get("subject"), str) else ""


def _token_bytes(token: bytes | str | Mapping) -> tuple[bytes, dict]:
    """A token's bytes to present, and the token parsed. Bytes and text are
    sent exactly as given; a parsed object is sent in canonical form, which
    is the form it was signed in."""
    if isinstance(token, Mapping):
        raw = canonicalize(token)
    elif isinstance(token, (bytes, bytearray, str)):
        raw = (token.encode("utf-8") if isinstance(token, str) else bytes(token)).strip()
    else:
        raise BadRequest(f"chio: an approval token is bytes, str or a dict, not {type(token).__name__}")
    if len(raw) > MAX_TOKEN_BYTES:
        raise BadRequest(f"chio: approval token larger than {MAX_TOKEN_BYTES} bytes")
    parsed = loads_strict(raw)
    if not isinstance(parsed, dict):
        raise BadRequest("chio: the token must be the signed JSON object")
    return raw, parsed


def _hitl_denial(res: Allowed | ToolDenied) -> None:
    """Turn a non-human ending of a confirm/ask into an exception."""
    if isinstance(res, Allowed):
        if res.tool_error:
            raise ChioError(f"chio: {res.request_id}: {res.tool_error}")
        return
    if res.status == "cancelled":
        # Withdrawn before a human decided: neither a human's nor a policy's no.
        raise Cancelled(f"chio: {res.request_id}: cancelled: {res.reason}")
    if res.guard == "approval-timeout":
        raise TimedOut(f"chio: {res.request_id}: {res.reason}")
    raise DeniedByPolicy(f"chio: {res.request_id}: {res.status} by {res.guard}: {res.reason}")
