"""Canonical JSON: RFC 8785 (JCS) under chio's strict rules (SPEC §2, §9).

Everything chio signs or hashes is the JCS form of a JSON value. On top of
RFC 8785, chio refuses what two implementations could read differently:

- duplicate object names (also when spelled apart, "a" and "\\u0061"),
  and names of one object that differ only in letter case ("a" and "A",
  "units" and "unit\\u017f"; Unicode simple case folding, see casefold.py),
- invalid UTF-8 and lone surrogates,
- nesting deeper than 64,
- numbers that are not finite doubles; integral values beyond ±2^53 in any
  spelling (9007199254740993, 1e21); and literals that are not exactly the
  double they parse to, i.e. not the decimal of its shortest form
  (9007199254740993.0 and 9.007199254740993e15 read as 2^53; 1e-400 reads
  as 0). The parameter hash binds the double; a tool that read the
  spelling would see another number. Send such values as strings.

``canonicalize`` takes Python values; ``canonicalize_text`` and ``RawJSON``
take JSON text, whose number spellings are judged exactly as written (a
Python float has already lost its spelling). ``jcs`` is plain RFC 8785
without chio's limits; the RFC's published vectors test it.

Reasons in CanonicalJSONError are those of testdata/vectors/canonical.json.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from .casefold import check_member_case
from .errors import CanonicalJSONError

MAX_DEPTH = 64
MAX_SAFE_INTEGER = 2**53
# Shortest forms of doubles need at most 24 characters; the rest is room for
# harmless trailing zeros (as chiod's internal/canon).
MAX_NUMBER_LEN = 100
# Untrusted text meets this limit before the parser (16 MiB, as the Go SDK).
MAX_TEXT_BYTES = 16 << 20

__all__ = ["RawJSON", "canonicalize", "canonicalize_text", "loads_strict", "jcs", "format_number", "MAX_DEPTH"]


class RawJSON:
    """JSON text to send as written, e.g. tool arguments an LLM produced.

    The text is parsed strictly at once, so that its number spellings are
    judged before they are rounded: RawJSON('{"n": 9007199254740993}') is
    refused, where the dict {"n": 9007199254740993.0} could not tell.
    """

    __slots__ = ("text", "value")

    def __init__(self, text: str | bytes):
        self.value = loads_strict(text)
        self.text = text if isinstance(text, str) else text.decode("utf-8")

    def __repr__(self) -> str:
        return f"RawJSON({self.text!r})"


def canonicalize(value: Any) -> bytes:
    """The canonical UTF-8 bytes of a Python value (dict, list, tuple, str,
    int, float, bool, None, RawJSON), refusing what chio refuses."""
    out: list[str] = []
    _encode(value, out, 0, strict=True)
    return "".join(out).encode("utf-8")


def canonicalize_text(text: str | bytes) -> bytes:
    """The canonical bytes of JSON text, checked strictly."""
    return canonicalize(loads_strict(text))


def jcs(value: Any) -> bytes:
    """Plain RFC 8785 of a Python value: no chio limits on numbers or depth."""
    out: list[str] = []
    _encode(value, out, 0, strict=False)
    return "".join(out).encode("utf-8")


# --- strict parsing -------------------------------------------------------


def loads_strict(text: str | bytes) -> Any:
    """Parse one JSON value, refusing duplicates, invalid UTF-8, lone
    surrogates, depth > 64, numbers that are not exactly one double within
    ±2^53 and (checked last, as chiod does) member names of one object that
    differ only in letter case."""
    if isinstance(text, (bytes, bytearray, memoryview)):
        if len(text) > MAX_TEXT_BYTES:
            raise CanonicalJSONError("invalid", f"JSON text larger than {MAX_TEXT_BYTES} bytes")
        try:
            # Decoded here, as UTF-8 only: json.loads would guess UTF-16/32.
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as e:
            raise CanonicalJSONError("invalid", f"invalid UTF-8 at byte {e.start}") from None
    elif not isinstance(text, str):
        raise CanonicalJSONError("invalid", f"JSON text must be str or bytes, not {type(text).__name__}")
    elif len(text) > MAX_TEXT_BYTES:
        raise CanonicalJSONError("invalid", f"JSON text larger than {MAX_TEXT_BYTES} characters")
    _check_depth(text)
    try:
        value = json.loads(
            text,
            object_pairs_hook=_object,
            parse_int=_int_literal,
            parse_float=_float_literal,
            parse_constant=_constant,
        )
    except CanonicalJSONError:
        raise
    except (ValueError, RecursionError) as e:
        raise CanonicalJSONError("invalid", f"invalid JSON: {e}") from None
    objects = _check_strings(value)
    # Last, as chiod: any other refusal anywhere in the text wins.
    for obj in objects:
        check_member_case(obj)
    return value


# Strings (with their escapes) and brackets: all the depth scan looks at.
# A string never ended runs to the end of the text (json.loads then refuses
# it as invalid): its brackets are not depth, and the scan does not go back
# to look for a closing quote from every quote after it (which was
# quadratic in the text's length).
_DEPTH_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*+(?:"|\\?\Z)|[\[\]{}]', re.DOTALL)


def _check_depth(text: str) -> None:
    """Refuse nesting deeper than MAX_DEPTH before the parser recurses."""
    depth = 0
    for m in _DEPTH_TOKENS.finditer(text):
        ch = m.group()
        if ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise CanonicalJSONError("too_deep", f"JSON nested deeper than {MAX_DEPTH}")
        elif ch in "]}":
            depth -= 1


def _object(pairs: list[tuple[str, Any]]) -> dict:
    obj: dict = {}
    for k, v in pairs:
        if k in obj:
            raise CanonicalJSONError("duplicate_key", f"duplicate object key {k!r}")
        obj[k] = v
    return obj


def _constant(name: str) -> Any:
    raise CanonicalJSONError("invalid", f"{name} is not JSON")


def _int_literal(lit: str) -> int:
    _check_length(lit)
    # More than 16 digits is beyond 2^53 whatever they are; checked before
    # int() so that a huge literal costs nothing.
    if len(lit.lstrip("-")) > 16 or abs(int(lit)) > MAX_SAFE_INTEGER:
        raise CanonicalJSONError("unsafe_number", f"integer {_clip(lit)} is beyond ±2^53; send it as a string")
    return int(lit)


def _float_literal(lit: str) -> float:
    _check_length(lit)
    f = float(lit)
    if math.isinf(f):
        raise CanonicalJSONError("number_range", f"number {_clip(lit)} is not a finite double")
    if f.is_integer() and abs(f) > MAX_SAFE_INTEGER:
        raise CanonicalJSONError("unsafe_number", f"number {_clip(lit)} is an integer beyond ±2^53; send it as a string")
    # The literal must be exactly the decimal that RFC 8785 writes for its
    # double (repr: the shortest that reads back): 1.50 is, but
    # 9007199254740993.0 (which reads as 2^53), 1e-400 (0) and
    # 0.1000000000000000055511151231257827 (the double 0.1) are not.
    if _decimal_of(lit) != _decimal_of(repr(f)):
        raise CanonicalJSONError(
            "inexact_number", f"number {_clip(lit)} is not exactly the double it denotes ({repr(f)}); send that, or a string"
        )
    return f


def _decimal_of(lit: str) -> str:
    """A number literal (or a float's repr) normalized to "sign digits e
    exponent", value = 0.digits × 10^exponent, digits without leading or
    trailing zeros; every zero is "0" (as chiod's decimalOf). It only moves
    characters: decimal.Decimal raises InvalidOperation for exponents beyond
    ±10^18, which JSON allows (0e99999999999999999999 is 0)."""
    neg = lit.startswith("-")
    mant, _, exp = lit.lstrip("-").lower().partition("e")
    whole, _, frac = mant.partition(".")
    digits = whole + frac
    trimmed = digits.lstrip("0")
    n = len(whole) - (len(digits) - len(trimmed))
    trimmed = trimmed.rstrip("0")
    if not trimmed:
        return "0"
    # The literal is at most MAX_NUMBER_LEN characters, so int() is cheap.
    return ("-" if neg else "+") + trimmed + "e" + str(n + (int(exp) if exp else 0))


def _check_length(lit: str) -> None:
    if len(lit) > MAX_NUMBER_LEN:
        raise CanonicalJSONError("number_range", f"number literal longer than {MAX_NUMBER_LEN} characters")


def _clip(s: str) -> str:
    return s if len(s) <= 40 else s[:37] + "..."


def _check_strings(value: Any) -> list[dict]:
    """Lone surrogates parse (json decodes "\\ud800"), but are not Unicode.
    Returns the objects met, for the member-case pass."""
    objects = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            _utf8(v)
        elif isinstance(v, dict):
            objects.append(v)
            for k, x in v.items():
                _utf8(k)
                stack.append(x)
        elif isinstance(v, list):
            stack.extend(v)
    return objects


def _utf8(s: str) -> bytes:
    try:
        return s.encode("utf-8")
    except UnicodeEncodeError as e:
        raise CanonicalJSONError("invalid", f"string holds a lone surrogate U+{ord(s[e.start]):04X}") from None


# --- encoding -------------------------------------------------------------

# RFC 8785 §3.2.2.2: only '"', '\\' and C0 controls are escaped; the five
# controls with short forms use them, the rest \u00xx in lowercase hex.
_ESCAPES = {i: f"\\u{i:04x}" for i in range(0x20)}
_ESCAPES.update({0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r", 0x22: '\\"', 0x5C: "\\\\"})


def _string(s: str) -> str:
    _utf8(s)
    return '"' + s.translate(_ESCAPES) + '"'


def _sort_key(name: str) -> bytes:
    # RFC 8785 §3.2.3 sorts by UTF-16 code units; big-endian UTF-16 bytes
    # compare in the same order.
    return name.encode("utf-16-be", "surrogatepass")


def _encode(v: Any, out: list[str], depth: int, strict: bool) -> None:
    if isinstance(v, RawJSON):
        v = v.value
    if v is None:
        out.append("null")
    elif v is True:
        out.append("true")
    elif v is False:
        out.append("false")
    elif isinstance(v, str):
        out.append(_string(v))
    elif isinstance(v, int):
        if strict and abs(v) > MAX_SAFE_INTEGER:
            raise CanonicalJSONError("unsafe_number", f"integer {_clip(str(v))} is beyond ±2^53; send it as a string")
        if not strict and abs(v) > MAX_SAFE_INTEGER:
            v = float(v)  # plain JCS: every number is a double
            out.append(format_number(v))
        else:
            out.append(str(int(v)))
    elif isinstance(v, float):
        if not math.isfinite(v):
            raise CanonicalJSONError("number_range", f"{v} is not a finite number")
        if strict and abs(v) > MAX_SAFE_INTEGER:
            raise CanonicalJSONError("unsafe_number", f"number {v!r} is beyond ±2^53; send it as a string")
        out.append(format_number(v))
    elif isinstance(v, Mapping):
        depth = _deeper(depth, strict)
        items = []
        for k, x in v.items():
            if not isinstance(k, str):
                raise CanonicalJSONError("invalid", f"object keys must be strings, not {type(k).__name__}")
            items.append((_sort_key(_check_key(k)), k, x))
        if strict:
            check_member_case(k for _, k, _ in items)
        items.sort(key=lambda t: t[0])
        out.append("{")
        for i, (_, k, x) in enumerate(items):
            if i:
                out.append(",")
            out.append(_string(k))
            out.append(":")
            _encode(x, out, depth, strict)
        out.append("}")
    elif isinstance(v, (list, tuple)):
        depth = _deeper(depth, strict)
        out.append("[")
        for i, x in enumerate(v):
            if i:
                out.append(",")
            _encode(x, out, depth, strict)
        out.append("]")
    else:
        raise CanonicalJSONError("invalid", f"{type(v).__name__} is not a JSON value")


def _check_key(k: str) -> str:
    _utf8(k)
    return k


def _deeper(depth: int, strict: bool) -> int:
    depth += 1
    if strict and depth > MAX_DEPTH:
        raise CanonicalJSONError("too_deep", f"JSON nested deeper than {MAX_DEPTH}")
    return depth


def format_number(x: float) -> str:
    """ECMAScript's Number::toString for a finite double (RFC 8785 §3.2.2.3).

    Python's repr gives the shortest digit string that reads back as x (the
    closest such, as ECMAScript requires); only the layout differs.
    """
    if x == 0:
        return "0"  # -0 too
    r = repr(abs(x))
    mantissa, _, exp = r.partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = whole + frac
    # x = 0.digits × 10^n
    n = len(whole) + (int(exp) if exp else 0)
    stripped = digits.lstrip("0")
    n -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        s = digits + "0" * (n - k)
    elif 0 < n <= 21:
        s = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        s = "0." + "0" * -n + digits
    else:
        e = n - 1
        sign = "+" if e >= 0 else "-"
        s = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + sign + str(abs(e))
    return "-" + s if x < 0 else s
