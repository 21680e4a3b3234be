"""Nova's extra-spec operators: does a host's value satisfy a flavor's requirement?

A requirement is a plain value (equality), or an operator and operand(s)::

    "= 4"  ">= 4"  "<= 4"  "== 4"  "!= 4"     numbers ("=" means at least)
    "s== a"  "s!= a"  "s< a"  "s<= a"  "s> a"  "s>= a"      strings
    "<in> sub"         the value contains "sub"
    "<all-in> a b"     the value contains each of the words
    "<or> a <or> b"    the value is one of them

Numbers that do not parse fail the match instead of raising (Nova would
raise mid-filter); a requirement with an operator but no operand fails too.
"""

from __future__ import annotations

import operator
from collections.abc import Callable

__all__ = ["match"]


def _numeric(compare: Callable[[float, float], bool]) -> Callable[[str, str], bool]:
    def check(value: str, wanted: str) -> bool:
        try:
            return compare(float(value), float(wanted))
        except ValueError:
            return False
    return check


_OPS: dict[str, Callable[[str, str], bool]] = {
    "=": _numeric(operator.ge), "==": _numeric(operator.eq), "!=": _numeric(operator.ne),
    ">=": _numeric(operator.ge), "<=": _numeric(operator.le),
    "s==": operator.eq, "s!=": operator.ne, "s<": operator.lt, "s<=": operator.le,
    "s>": operator.gt, "s>=": operator.ge,
    "<in>": lambda value, wanted: wanted in value,
}


def match(value: str | None, requirement: str) -> bool:
    """Whether `value` (a host's) satisfies `requirement` (a flavor's extra spec value)."""
    words = requirement.split()
    op = words.pop(0) if words else None
    if op not in _OPS and op not in ("<or>", "<all-in>"):
        return value == requirement
    if value is None or not words:
        return False
    if op == "<or>":
        # "<or> a <or> b": the operands are every other word.
        return value in words[::2]
    if op == "<all-in>":
        return all(word in value for word in words)
    return _OPS[str(op)](value, words[0])
