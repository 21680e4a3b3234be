"""Request-body schemas checked by generated code, with jsonschema's exact errors.

Why: jsonschema walks a schema with a validator object per level; a POST
/allocations of 10,000 consumers spent ~45 µs per consumer there, more than
the database write. `fastjsonschema` turns a schema into one Python function
that answers accept/reject in a few µs per consumer.

The messages stay jsonschema's (upstream Placement quotes them, and the gabbi
suite matches on them): the compiled function only *accepts*. When it rejects
-- or raises anything -- the reference `jsonschema.Draft4Validator` runs on
the same data and decides: its first error is raised as before, and when it
finds none the body is accepted. A body is therefore rejected only when the
reference rejects it, with the reference's message.

The other direction (compiled accepts what the reference would reject) must
never happen; `tests/unit/test_compiled_schema.py` checks it on a corpus of
valid and mutated bodies for every Placement schema. Two known differences of
fastjsonschema are kept out by construction:

- its `enum` and `uniqueItems` compare with Python's `==` (`1 == True`):
  a schema using them is compiled only when the values compared are strings,
  otherwise it is checked by the reference alone;
- its `pattern` reads `$` as the very end of the string, where Python's
  `re` (and so jsonschema) also matches before a final newline, and it
  keeps one compiled regex per pattern text, so the same text used as a
  `pattern` and as a `patternProperties` key gets one reading for both.
  The compiled copy of the schema therefore spells each `$` anchor as
  `(?=\\n?\\Z)`, which is what `$` means to `re`; a pattern with a `$`
  inside a character class is left to the reference.

Keywords outside `_COMPILABLE` (any this code has not been checked with)
also leave the schema to the reference alone.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import fastjsonschema
import jsonschema

__all__ = ["CompiledSchema", "compiled", "is_compilable"]

_DRAFT4 = "http://json-schema.org/draft-04/schema#"
# Keywords whose compiled check the differential test covers. Annotations
# (title, description) never change the outcome.
_COMPILABLE = frozenset({
    "type", "properties", "patternProperties", "additionalProperties", "required",
    "minProperties", "maxProperties", "items", "minItems", "maxItems", "uniqueItems",
    "minLength", "maxLength", "pattern", "minimum", "maximum", "format", "anyOf", "enum",
    "title", "description", "$schema",
})
_SUBSCHEMA_MAPS = ("properties", "patternProperties")


def _subschemas(schema: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """The schemas nested directly in `schema`."""
    for key in _SUBSCHEMA_MAPS:
        yield from schema.get(key, {}).values()
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), Mapping):
            yield schema[key]
    yield from schema.get("anyOf", [])


_END = "(?=\\n?\\Z)"  # re's "$" without MULTILINE, spelt without "$"


def _spelt(pattern: str) -> str | None:
    """`pattern` with each `$` anchor spelt as `_END`; None when a `$` sits in a
    character class (fastjsonschema would rewrite it there too)."""
    out: list[str] = []
    escaped = in_class = False
    class_start = -1  # where the class's members begin: a "]" there is a member
    for index, char in enumerate(pattern):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_class:
            if char == "^" and index == class_start:
                class_start += 1
            elif char == "]" and index != class_start:
                in_class = False
            elif char == "$":
                return None
        elif char == "[":
            in_class, class_start = True, index + 1
        elif char == "$":
            out.append(_END)
            continue
        out.append(char)
    return "".join(out)


def _pattern_ok(pattern: object) -> bool:
    return isinstance(pattern, str) and _spelt(pattern) is not None


def _only_strings(schema: Mapping[str, Any]) -> bool:
    return schema.get("type") == "string"


def is_compilable(schema: Mapping[str, Any]) -> bool:
    """Whether every keyword of `schema` (nested ones too) is one the compiled check
    decides exactly as jsonschema does (see the module docstring)."""
    if not isinstance(schema, Mapping) or set(schema) - _COMPILABLE:
        return False
    if "enum" in schema and not all(isinstance(v, str) for v in schema["enum"]):
        return False
    if schema.get("uniqueItems") and not (isinstance(schema.get("items"), Mapping)
                                          and _only_strings(schema["items"])):
        return False
    if isinstance(schema.get("items"), list):  # tuple form: not covered
        return False
    patterns = list(schema.get("patternProperties", {}))
    if "pattern" in schema:
        patterns.append(schema["pattern"])
    if not all(_pattern_ok(p) for p in patterns):
        return False
    return all(is_compilable(sub) for sub in _subschemas(schema))


def _respelt(pattern: str) -> str:
    spelt = _spelt(pattern)
    if spelt is None:  # is_compilable refused the schema before
        raise ValueError(f"pattern {pattern!r} cannot be compiled")
    return spelt


def _without_dollars(schema: Any) -> Any:
    """A copy of `schema` with each pattern's `$` anchors spelt as `_END`."""
    if not isinstance(schema, Mapping):
        return copy.deepcopy(schema)
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "pattern":
            out[key] = _respelt(value)
        elif key == "patternProperties":
            out[key] = {_respelt(p): _without_dollars(sub) for p, sub in value.items()}
        elif key == "properties":
            out[key] = {name: _without_dollars(sub) for name, sub in value.items()}
        elif isinstance(value, Mapping):
            out[key] = _without_dollars(value)
        elif isinstance(value, list):
            out[key] = [_without_dollars(item) for item in value]
        else:
            out[key] = value
    return out


def _formats_of(schema: Mapping[str, Any]) -> set[str]:
    found = {schema["format"]} if "format" in schema else set()
    for sub in _subschemas(schema):
        found |= _formats_of(sub)
    return found


def _compile(schema: Mapping[str, Any],
             format_checker: jsonschema.FormatChecker | None) -> Callable[[Any], Any] | None:
    if not is_compilable(schema):
        return None
    draft4 = _without_dollars(schema)
    draft4["$schema"] = _DRAFT4
    # Every format goes to the reference's own checker, so both agree on it;
    # without a checker jsonschema ignores formats, and so must the compiled code.
    formats: dict[str, Callable[[Any], bool]] = {}
    if format_checker is not None:
        for name in _formats_of(schema):
            formats[name] = (lambda value, name=name:  # type: ignore[misc]
                             format_checker.conforms(value, name))
    try:
        return fastjsonschema.compile(draft4, formats=formats, use_default=False,
                                      use_formats=format_checker is not None,
                                      detailed_exceptions=False)
    except fastjsonschema.JsonSchemaDefinitionException:
        return None  # a schema it cannot read: jsonschema alone, as before


class CompiledSchema:
    """One schema: a compiled accept check in front of the reference validator."""

    def __init__(self, schema: Mapping[str, Any],
                 format_checker: jsonschema.FormatChecker | None = None) -> None:
        self.schema = schema
        self.format_checker = format_checker
        self.reference = jsonschema.Draft4Validator(schema, format_checker=format_checker)
        self._accepts = _compile(schema, format_checker)

    @property
    def is_compiled(self) -> bool:
        return self._accepts is not None

    def compiled_accepts(self, data: Any) -> bool:
        """The generated code's verdict alone (False when there is none): for the tests."""
        if self._accepts is None:
            return False
        try:
            self._accepts(data)
        except Exception:  # noqa: BLE001
            return False
        return True

    def validate(self, data: Any) -> None:
        """Return when the reference accepts `data`; raise its first error otherwise."""
        if self._accepts is not None:
            try:
                self._accepts(data)
            except Exception:  # noqa: BLE001 -- any doubt goes to the reference
                pass
            else:
                return
        self.reference.validate(data)


# By schema object: handlers pass module constants or schemas built once per
# microversion, so this stays small; an entry holds its schema, so a cached id
# always names that very object.
_CACHE: OrderedDict[tuple[int, int], CompiledSchema] = OrderedDict()
_KEPT = 256
_LOCK = threading.Lock()


def compiled(schema: Mapping[str, Any],
             format_checker: jsonschema.FormatChecker | None = None) -> CompiledSchema:
    """The cached `CompiledSchema` of this schema object and format checker."""
    key = (id(schema), id(format_checker))
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None and hit.schema is schema and hit.format_checker is format_checker:
            _CACHE.move_to_end(key)
            return hit
    made = CompiledSchema(schema, format_checker)
    with _LOCK:
        _CACHE[key] = made
        if len(_CACHE) > _KEPT:
            _CACHE.popitem(last=False)
    return made
