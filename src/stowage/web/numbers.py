"""Numbers too long to convert: Python's guard against quadratic `int()` made a 400.

Python 3.11 refuses `int()` of a decimal string of more than 4,300 digits
(`sys.get_int_max_str_digits()`, CVE-2020-10735) with a ValueError that most
call sites do not expect: a `?limit=`, an `If-Match: revision_number=` or a
numeric body string holding one would be a 500. Raising the limit
(`sys.set_int_max_str_digits`) would only bring the quadratic conversion back;
instead the pipeline (`web.app`) recognises the error wherever it comes from
and answers 400 in the service's own format, like any other bad number.
"""

from __future__ import annotations

import sys

__all__ = ["TOO_MANY_DIGITS", "too_many_digits"]

TOO_MANY_DIGITS = (f"Invalid input: a number has more than {sys.get_int_max_str_digits()} "
                   "digits.")
# The stable part of CPython's message ("Exceeds the limit (4300 digits) for
# integer string conversion: value has N digits; ...").
_MARK = "for integer string conversion"


def too_many_digits(exc: BaseException) -> bool:
    """Whether `exc` is CPython's refusal to convert an over-long decimal string."""
    return isinstance(exc, ValueError) and _MARK in str(exc)
