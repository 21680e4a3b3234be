"""Schema failures as error text that quotes the client's value only in bounded form.

jsonschema's own messages embed the whole offending value ("'aaa...' is too
long", "Additional properties are not allowed (...)", "{...} is not valid
under any of the given schemas"), so a 10 MB bad value would come back as a
10 MB error body. These helpers keep upstream's wording and layout while
cutting every quoted value to a few hundred characters.
"""

from __future__ import annotations

import pprint
import reprlib
from collections.abc import Iterable

import jsonschema

from stowage.web.errors import VALUE_LIMIT, shorten

__all__ = ["message", "verbose", "quoted"]

_REPR = reprlib.Repr()
_REPR.maxstring = VALUE_LIMIT
_REPR.maxother = VALUE_LIMIT
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 20
_REPR.maxlevel = 4
# Schemas are ours, but an enum of every known name can still be long.
_SCHEMA_LIMIT = 1000


def quoted(value: object) -> str:
    """A bounded repr of a client's value, cheap even for a huge one."""
    return shorten(_REPR.repr(value), VALUE_LIMIT)


def message(err: jsonschema.ValidationError) -> str:
    """jsonschema's one-line message, cut in the middle where it quotes a long value.

    The value sits between the words ("'aaa...' is too long", "Additional
    properties are not allowed ('...' was unexpected)"), so both ends are kept.
    """
    text = str(err.message)
    if len(text) <= 2 * VALUE_LIMIT:
        return text
    return f"{text[:VALUE_LIMIT]}...{text[-VALUE_LIMIT // 2:]}"


def _index(word: str, parts: Iterable[object]) -> str:
    indices = list(parts)
    if not indices:
        return word
    return word + "".join(f"[{shorten(repr(p), 40)}]" for p in indices)


def verbose(err: jsonschema.ValidationError) -> str:
    """str(err) as jsonschema lays it out (Placement's 400s quote it), values bounded."""
    schema_path = _index("schema", list(err.relative_schema_path)[:-1])
    schema = shorten(pprint.pformat(err.schema, width=72), _SCHEMA_LIMIT)
    indent = "\n    "
    return (f"{message(err)}\n\n"
            f"Failed validating {err.validator!r} in {schema_path}:\n"
            f"    {schema.replace(chr(10), indent)}\n\n"
            f"On {_index('instance', err.relative_path)}:\n"
            f"    {quoted(err.instance)}")
