"""Approver tooling: sign a decision on an approval request (SPEC §3,
GovernedApprovalToken). The token is the credential: whoever presents it
(a channel, a workflow engine, Client.resume_with_approval) needs nothing
else. The kernel checks it against its own copy of the request, so a
tampered request only yields a token that is refused.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from .canon import RawJSON, canonicalize, loads_strict
from .errors import BadRequest
from .keys import PrivateKey
from .signing import new_id, sign_object

TOKEN_DOMAIN = "chio.approval-token.v1"
DEFAULT_TOKEN_TTL = 600  # seconds: a token is meant to be presented now
MAX_APPROVAL_TTL = 3600  # chiod refuses longer-lived tokens
MAX_NOTE_BYTES = 2000


def sign_approval(
    request: Mapping,
    key: PrivateKey,
    *,
    note: str | None = None,
    amended_arguments: Mapping | RawJSON | None = None,
    answers: Mapping[str, Any] | None = None,
    ttl: int = DEFAULT_TOKEN_TTL,
    issued_at: int | None = None,
    token_id: str | None = None,
) -> bytes:
    """Sign an approval of request (the "request" object of GET
    /approvals/{id}) and return the token bytes to present.

    amended_arguments approves an edited call; answers answers a question
    request ({question_id: "answer" or ["choice", …]}). issued_at and
    token_id exist for reproducible tests; leave them unset.
    """
    extra: dict = {}
    if amended_arguments is not None:
        if isinstance(amended_arguments, RawJSON):
            amended_arguments = amended_arguments.value
        if not isinstance(amended_arguments, Mapping):
            raise BadRequest("chio: amended arguments must be a JSON object")
        extra["amended_arguments"] = amended_arguments
    if answers is not None:
        extra["answers"] = _shape_answers(request, answers)
    return _sign(request, key, "approved", note, extra, ttl, issued_at, token_id)


def sign_denial(
    request: Mapping,
    key: PrivateKey,
    reason: str,
    *,
    ttl: int = DEFAULT_TOKEN_TTL,
    issued_at: int | None = None,
    token_id: str | None = None,
) -> bytes:
    """Sign a denial of request; reason is signed as the note, shown to the
    agent and kept in the receipt."""
    if not reason or not reason.strip():
        raise BadRequest("chio: a denial needs a reason")
    return _sign(request, key, "denied", reason, {}, ttl, issued_at, token_id)


def _sign(request, key, decision, note, extra, ttl, issued_at, token_id) -> bytes:
    for field in ("approval_id", "subject_id", "parameter_hash"):
        if not isinstance(request.get(field), str) or not request.get(field):
            raise BadRequest(f"chio: the approval request has no {field}")
    if not isinstance(ttl, int) or not 0 < ttl <= MAX_APPROVAL_TTL:
        raise BadRequest(f"chio: token ttl must be 1..{MAX_APPROVAL_TTL} seconds")
    if note and len(note.encode("utf-8", "surrogatepass")) > MAX_NOTE_BYTES:
        raise BadRequest(f"chio: note longer than {MAX_NOTE_BYTES} bytes")
    now = int(time.time()) if issued_at is None else issued_at
    token = {
        "schema": TOKEN_DOMAIN,
        "id": token_id or new_id("at-"),
        "approver": key.public_key,
        "subject": request["subject_id"],
        "governed_intent_hash": request["parameter_hash"],
        "request_id": request["approval_id"],  # a token binds to the approval request
        "issued_at": now,
        "expires_at": now + ttl,
        "decision": decision,
    }
    if note:
        token["note"] = note
    token.update(extra)
    return sign_object(key, TOKEN_DOMAIN, token)


def _shape_answers(request: Mapping, answers: Mapping[str, Any]) -> dict:
    """Answers as the kernel wants them: a string for text and single
    questions, a list for multi. Checked against the questions now, so an
    approver learns of a mistake before the kernel refuses the token."""
    questions = request.get("questions")
    if isinstance(questions, (str, bytes)):
        questions = loads_strict(questions)
    if request.get("kind") != "question" or not isinstance(questions, list):
        raise BadRequest(f"chio: {request.get('approval_id')} is not a question request")
    by_id = {q.get("id"): q for q in questions if isinstance(q, Mapping)}
    out: dict = {}
    for qid, picks in answers.items():
        q = by_id.get(qid)
        if q is None:
            raise BadRequest(f"chio: no question {qid!r}")
        if isinstance(picks, str):
            picks = [picks]
        picks = list(picks)
        if not all(isinstance(p, str) for p in picks):
            raise BadRequest(f"chio: answers to {qid!r} must be strings")
        if q.get("type") == "multi":
            out[qid] = picks
        elif len(picks) == 1:
            out[qid] = picks[0]
        else:
            raise BadRequest(f"chio: question {qid!r} takes exactly one answer")
    missing = [qid for qid in by_id if qid not in out]
    if missing:
        raise BadRequest(f"chio: no answer to {', '.join(map(repr, missing))}")
    canonicalize(out)  # strict JSON now, not at signing
    return out
