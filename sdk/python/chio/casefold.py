"""Member names that differ only in letter case (as chiod's internal/canon).

Readers of JSON disagree about them: a dict (chiod's CEL conditions, JSON
pointers, its guards) keeps "units" and "unit\\u017f" apart, while a
case-insensitive decoder (Go's encoding/json, many frameworks mapping JSON
to classes) reads both as the field "units", the last one winning. A
signature covers the JCS form, where members are sorted, so member order is
not signed and one signed object could mean two things. chiod therefore
refuses any object holding two member names equal under Unicode simple case
folding (Go's strings.EqualFold: "a"/"A", "s"/"\\u017f" (long s),
"k"/"\\u212a" (Kelvin sign), "\\u03c3"/"\\u03c2") but not identical; this SDK
refuses the same objects first, with the reason "duplicate_key".

Simple folding maps one code point to one: "\\u00df" is not "ss" (str.casefold
would say it is, and str.lower/upper differ from it elsewhere too). So the
orbits come from Go's unicode.SimpleFold, generated into _casefold_table.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ._casefold_table import ORBITS
from .errors import CanonicalJSONError

__all__ = ["fold_key", "may_fold", "check_member_case"]

# Code point → the least code point of its orbit, for those not already
# least; str.translate leaves every other code point as it is.
_TO_LEAST: dict[int, int] = {cp: min(orbit) for orbit in ORBITS for cp in orbit if cp != min(orbit)}

# Of two distinct names equal under folding, at least one holds an upper-case
# ASCII letter or a non-ASCII character: lower-case ASCII folds only with
# those (internal/vectors' TestCaseFoldTables checks this of every orbit).
_MAY_FOLD = re.compile(r"[A-Z]|[^\x00-\x7f]")


def may_fold(name: str) -> bool:
    """Whether name holds an upper-case ASCII letter or a non-ASCII character."""
    return _MAY_FOLD.search(name) is not None


def fold_key(name: str) -> str:
    """A key shared by exactly the names simple case folding equates with
    name: each code point replaced by the least of its orbit."""
    return name.translate(_TO_LEAST)


def check_member_case(names: Iterable[str]) -> None:
    """Refuse two distinct names of one object equal under simple folding.

    names are one object's member names, all distinct (exact duplicates are
    refused before). Objects whose names are all free of upper-case ASCII
    and non-ASCII, the common case, cost one regular-expression scan each.
    """
    names = list(names)
    if not any(may_fold(n) for n in names):
        return
    seen: dict[str, str] = {}
    for name in names:
        prev = seen.setdefault(fold_key(name), name)
        if prev != name:
            raise CanonicalJSONError(
                "duplicate_key",
                # ascii() escapes non-ASCII ('unit\u017f'): look-alikes show.
                f"member names {ascii(prev)} and {ascii(name)} differ only in letter case;"
                " chio matches names exactly and refuses such objects",
            )

