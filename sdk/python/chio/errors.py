"""Errors raised by the chio SDK.

A denial is a result (ToolDenied), never an exception. Exceptions are for
bad input, refused credentials, conflicts and transport failures; catch them
by class. When chiod answered, ``status`` is the HTTP status and ``code`` its
error code (``{"error": code, "message": text}``, SPEC §6); both are None for
errors found before anything was sent.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone


class ChioError(Exception):
    """Base class of every error this SDK raises."""

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None, retry_after: float = 0.0):
        super().__init__(message)
        self.status = status
        self.code = code
        # The answer's Retry-After in seconds (0.0 if none): chiod turned
        # the request away until a share frees up. The SDK's own retries
        # wait at least this long, or end at once if the deadline is nearer.
        self.retry_after = retry_after


class BadRequest(ChioError):
    """The input was refused, by this SDK or by chiod (400)."""


class Unauthorized(ChioError):
    """The key, capability, proof or bearer was not accepted (401)."""


class NotFound(ChioError):
    """No such call or approval (404)."""


class Conflict(ChioError):
    """A request id reused for another call, a token already presented, or
    an approval no longer pending (409)."""


class ApprovalRejected(ChioError):
    """chiod refused a presented approval token (403)."""


class Unavailable(ChioError):
    """chiod itself could not decide (its 503 ``unavailable`` envelope, or a
    429); nothing was allowed. call_tool raises it only when no attempt's
    answer was lost."""


class NotSent(Unavailable):
    """call_tool could not send the call: its last attempt could not even
    connect to chiod (connection refused, no route, a name that does not
    resolve, no connection within the connect timeout: chiod is not
    running, or the URL is wrong), or call_tool's timeout passed before any
    attempt's connection was ready, and no attempt's answer was lost. The
    call did not run; it is safe to send it again. ``request_id`` names it.
    Never an OutcomeUnknown."""

    def __init__(self, message: str, *, request_id: str | None = None):
        super().__init__(message)
        self.request_id = request_id


class OutcomeUnknown(ChioError):
    """The answer was lost after the request may have reached chiod: no
    complete answer, or a 5xx that is not chiod's own (a proxy's 502 or 504
    after forwarding). For a call it MAY HAVE RUN: never submit it again
    under a new request id. Retry call_tool with the same ``request_id``
    (the tool runs at most once) or await_approval(request_id).
    ``request_id`` names the call when call_tool raised it."""

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None, request_id: str | None = None):
        super().__init__(message, status=status, code=code)
        self.request_id = request_id


class TransportError(OutcomeUnknown):
    """The request never got a complete HTTP answer (connection refused,
    reset, timed out, cut short): it may or may not have reached chiod.
    call_tool raises NotSent instead when its attempts could not connect at
    all (see NotSent)."""


class BadAnswer(ChioError):
    """A complete answer that cannot be read: larger than the SDK's limit,
    or not the JSON expected. call_tool turns it into OutcomeUnknown (the
    answer came after the call reached a server, so it may have run)."""


class VoteRecorded(ChioError):
    """chiod's 500 ``vote_recorded`` to respond: the approver's vote IS
    recorded (counted, its token spent, the request approved), but a step
    after it failed, so the approved call is not finished yet; chiod
    finishes it when its store recovers (await_approval or approval tells
    how it ended). Do not vote again (the same token is refused as a
    replay) and do not ask another approver. Not an OutcomeUnknown nor an
    Unavailable, and never retried."""


class VoteUncertain(ChioError):
    """chiod's 503 ``vote_uncertain`` to respond: the vote's own commit
    failed in a way that may still have reached chiod's disk (an fsync
    error, a database COMMIT whose answer was lost). The vote MAY OR MAY
    NOT be recorded, and may have approved, and run, the call. Present the
    SAME token again once chiod recovers: a recorded vote is refused as a
    replay (Conflict: "already decided this request"), never counted twice;
    otherwise it counts then. Do not ask another approver on the belief
    that it did nothing. Not an Unavailable (nothing allowed) nor an
    OutcomeUnknown; resume_with_approval retries it with the same token,
    never a new one."""


class TimedOut(ChioError):
    """The wait ended before a decision: the caller's timeout, or the
    approval's own deadline for a confirm/ask. The call may still be pending.

    When confirm's or ask's timeout passed before chiod answered the call,
    ``request_id`` names it and ``__cause__`` says whether it was sent:
    NotSent (no attempt's connection was ready: no human was asked, and
    asking again is safe) or OutcomeUnknown (it may be waiting for a human:
    await_approval(request_id), or ask again with the same request_id) —
    TypeScript's "timed_out" carries the same cause."""

    def __init__(self, message: str, *, request_id: str | None = None):
        super().__init__(message)
        self.request_id = request_id


class Declined(ChioError):
    """A human denied an ask."""


class DeniedByPolicy(ChioError):
    """A policy guard (not a human) denied a confirm or ask."""


class Cancelled(ChioError):
    """A confirm or ask was withdrawn (by the agent or an operator) before
    a human decided; no human said no."""


class CanonicalJSONError(BadRequest):
    """A value cannot be signed or hashed: it is not strict JSON, or a number
    is not exactly one double (integral ones within ±2^53). ``reason`` is one
    of ``invalid``, ``duplicate_key``, ``unsafe_number``, ``inexact_number``,
    ``number_range``, ``too_deep`` (the names used by
    testdata/vectors/canonical.json)."""

    def __init__(self, reason: str, message: str):
        super().__init__(f"chio: {message}")
        self.reason = reason


_BY_CODE = {
    "bad_request": BadRequest,
    "unauthorized": Unauthorized,
    "not_found": NotFound,
    "conflict": Conflict,
    "replay_detected": Conflict,
    "approval_rejected": ApprovalRejected,
    "unavailable": Unavailable,
    "outcome_unknown": OutcomeUnknown,  # chiod's own: decided, outcome not recorded yet
    "vote_recorded": VoteRecorded,  # chiod's own: the vote is durable, a later step failed
    "vote_uncertain": VoteUncertain,  # chiod's own: the vote's commit may or may not have landed
}


MAX_RETRY_AFTER = 3600.0


def parse_retry_after(value: str | None) -> float:
    """A Retry-After (RFC 9110 section 10.2.3) in seconds, capped at an
    hour: delta-seconds (chiod sends these), or an HTTP-date (a proxy or
    load balancer in front of chiod may send one), read as the seconds from
    now until then. A date past, or anything else, is 0.0."""
    v = (value or "").strip()
    if v.isascii() and v.isdigit():
        return min(float(int(v)), MAX_RETRY_AFTER) if len(v) < 20 else MAX_RETRY_AFTER
    when = _http_date(v)
    if when is None:
        return 0.0
    return min(max((when - datetime.now(timezone.utc)).total_seconds(), 0.0), MAX_RETRY_AFTER)


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MON = "(?P<mon>" + "|".join(_MONTHS) + ")"
_TIME = r"(?P<h>\d{2}):(?P<m>\d{2}):(?P<s>\d{2})"
# RFC 9110 section 5.6.7: IMF-fixdate, and the obsolete RFC 850 and asctime
# forms a recipient must accept too.
_HTTP_DATES = tuple(
    re.compile(p, re.ASCII)
    for p in (
        r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (?P<d>\d{2}) " + _MON + r" (?P<y>\d{4}) " + _TIME + " GMT",
        r"(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (?P<d>\d{2})-" + _MON + r"-(?P<yy>\d{2}) " + _TIME + " GMT",
        r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) " + _MON + r" (?P<d>[ \d]\d) " + _TIME + r" (?P<y>\d{4})",
    )
)


def _http_date(v: str) -> datetime | None:
    """v as an HTTP-date (always UTC), or None if it is not one."""
    for form in _HTTP_DATES:
        m = form.fullmatch(v)
        if m is None:
            continue
        if "yy" in form.groupindex:
            # A two-digit year more than 50 years ahead is the most recent
            # past year with those digits (RFC 9110 section 5.6.7).
            year = 2000 + int(m["yy"])
            if year > datetime.now(timezone.utc).year + 50:
                year -= 100
        else:
            year = int(m["y"])
        try:
            return datetime(
                year, _MONTHS.index(m["mon"]) + 1, int(m["d"]), int(m["h"]), int(m["m"]), int(m["s"]), tzinfo=timezone.utc
            )
        except ValueError:  # 31 Feb, 25:00:00, year 0
            return None
    return None


def api_error(status: int, code: str | None, message: str, retry_after: float = 0.0) -> ChioError:
    """The exception for one of chiod's error answers. A body that is not
    chiod's envelope (a proxy's error page) is classified by status. A 502
    or 504, or a 5xx that is not chiod's envelope, is OutcomeUnknown: a
    gateway may send it after it forwarded the request and lost the answer."""
    cls = _BY_CODE.get(code or "")
    if status in (502, 504):
        cls = OutcomeUnknown
    if cls is None:
        if status >= 500:
            cls = OutcomeUnknown
        elif status == 429:
            cls = Unavailable
        elif status == 401:
            cls = Unauthorized
        elif status == 404:
            cls = NotFound
        else:
            cls = ChioError
    err = cls(f"chio: {code or 'http error'} ({status}): {message}", status=status, code=code)
    err.retry_after = retry_after
    return err


def retryable(err: BaseException) -> bool:
    """Whether asking again may give a different answer: no answer at all,
    or chiod restarting, overloaded or behind a failing proxy. A recorded
    vote is final: its token presented again is only a replay. An
    uncertain vote (503 vote_uncertain) is retried: only respond meets it,
    and only with the same token, which settles it."""
    if isinstance(err, VoteRecorded):
        return False
    if isinstance(err, TransportError):
        return True
    return isinstance(err, ChioError) and err.status is not None and (err.status >= 500 or err.status == 429)
