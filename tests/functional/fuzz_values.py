"""Hostile values for the fuzz test, and the JSON writer that can send them.

Python's `json` cannot write what a hostile client sends: a lone surrogate
as a raw escape (`"\\ud800"`), a key given twice, a number no float holds
(`1e400`), nesting deeper than the recursion limit. So bodies are built from
plain JSON values plus three markers, and written by `encode`:

    Raw("...")        JSON text inserted verbatim
    Pairs(((k, v),))  an object written key by key (keys may repeat)
    Ref("name")       an id of the seeded world, resolved when the request is sent

`body_variants(template)` turns one valid body into hostile ones: a leaf
replaced (mostly by its own kind gone wrong: a number no column holds, a
string with a lone surrogate), a key dropped, added, renamed or given twice,
a value wrapped in a list, or the whole body replaced by garbage. Choices are
`weighted` towards what reaches a handler (valid ids, one change at a time).
Generation needs no server, so a failing example prints as the request sent.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any
from urllib.parse import quote

from hypothesis import strategies as st

__all__ = ["Raw", "Pairs", "Ref", "encode", "weighted", "hostile_value", "hostile_text",
           "path_segment", "body_variants", "garbage_body", "query_strings"]


@dataclass(frozen=True)
class Raw:
    """JSON text written as is."""

    text: str


@dataclass(frozen=True)
class Pairs:
    """A JSON object written pair by pair, so that a key may appear twice (or be Raw)."""

    items: tuple[tuple[str | Raw, Any], ...]


@dataclass(frozen=True)
class Ref:
    """A name of the seeded world (`flavor.small`, `rp.root`, ...), resolved at send time."""

    name: str


Resolve = Callable[[Ref], Any]


def encode(value: Any, resolve: Resolve, ascii_only: bool = True) -> str:
    """`value` as JSON text; a Ref becomes whatever `resolve` gives (itself encoded)."""
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, Ref):
        return encode(resolve(value), resolve, ascii_only)
    if isinstance(value, Pairs):
        return "{" + ", ".join(f"{encode(k, resolve, ascii_only)}: "
                               f"{encode(v, resolve, ascii_only)}" for k, v in value.items) + "}"
    if isinstance(value, dict):
        return encode(Pairs(tuple(value.items())), resolve, ascii_only)
    if isinstance(value, list | tuple):
        if all(isinstance(v, _PLAIN) for v in value):
            return json.dumps(value, ensure_ascii=ascii_only)
        return "[" + ", ".join(encode(v, resolve, ascii_only) for v in value) + "]"
    return json.dumps(value, ensure_ascii=ascii_only)


_PLAIN = (str, int, float, bool, type(None))


def weighted(*choices: tuple[int, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """One of `choices`, each as often as its weight (one_of would treat them alike)."""
    slots = [strategy for weight, strategy in choices for _ in range(weight)]
    return st.integers(0, len(slots) - 1).flatmap(slots.__getitem__)


# -- scalars ---------------------------------------------------------------------------

# Beyond what an INTEGER column (4 bytes), a BIGINT (8) or a double holds exactly.
_BIG = (2**31, 2**32, 2**53 + 1, 2**63, -(2**63) - 1, 2**64, 10**30, 10**300)
_INTEGERS = (0, -1, 1, 2**31 - 1, 2**63 - 1, *_BIG)
_RAW_NUMBERS = ("1e400", "-1e400", "1.0", "-0", "0.0", "1E2", "NaN", "Infinity", "-Infinity",
                "123456789012345678901234567890.5", "1e-400")
_FLOATS = (0.5, -0.5, 1.5, 1e308, -1e308, 5e-324)
_RAW_STRINGS = ('"\\ud800"', '"x\\udfffy"', '"\\udc00\\ud800"', '"\\u0000"', '"a\\u0000b"',
                '"\\ud83d\\ude00"', '"\\uffff"')
_STRINGS = ("", " ", "  padded  ", "\t", "\n", "a" * 256, "a" * 4096, "x" * 70000, "\x00",
            "\u202eRTL", "\U0001f600", "\U0010ffff", "e\u0301", "\ufeffbom", "%00", "%2F", "..",
            "../../etc/passwd", "' OR 1=1 --", "\"; DROP TABLE x; --", "(a+)+$", "[", "\\",
            "CUSTOM_", "CUSTOM_" + "A" * 300, "custom_lower", "VCPU", "MEMORY_MB", "null", "true",
            "0", "-1", "1.5", "9223372036854775808", "00000000-0000-0000-0000-000000000000",
            "not-a-uuid", "ffffffff-ffff-ffff-ffff-ffffffffffff", "host1", "admin", "nova",
            "1.2.3.4", "999.0.0.1", "::1", "2001:db8::zz", "aGVsbG8=", "###", "a/b", "a?b",
            "AAAAAAAA-AAAA-AAAA-AAAA-AAAAAAAAAAAA", "2026-01-01T00:00:00Z")


@cache
def hostile_text() -> st.SearchStrategy[str]:
    """Strings that have broken parsers, validators, databases or regexes somewhere."""
    return st.one_of(st.sampled_from(_STRINGS), st.text(max_size=40),
                     st.text(st.characters(codec="utf-8"), max_size=300))


@cache
def hostile_scalar() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.sampled_from(_INTEGERS), st.integers(), st.sampled_from(_FLOATS),
        st.floats(allow_nan=False, allow_infinity=False),
        st.sampled_from(_RAW_NUMBERS).map(Raw), st.booleans(), st.none(),
        hostile_text(), st.sampled_from(_RAW_STRINGS).map(Raw))


@cache
def hostile_number() -> st.SearchStrategy[Any]:
    """Numbers a column or a float cannot hold, and numbers that are not quite numbers."""
    return weighted((3, st.sampled_from(_BIG)), (2, st.sampled_from(_INTEGERS)),
                    (1, st.integers()),
                    (1, st.sampled_from(_FLOATS)), (2, st.sampled_from(_RAW_NUMBERS).map(Raw)),
                    (1, st.sampled_from(_INTEGERS).map(str)), (1, st.sampled_from(
                        ("", " 1", "1 ", "0x10", "1e3", "1_000", "+1", "NaN", "inf", "٣"))))


def hostile_like(original: Any) -> st.SearchStrategy[Any]:
    """A replacement for `original`: mostly its own kind gone wrong, sometimes anything."""
    if isinstance(original, bool) or original is None:
        return _like("flag")
    if isinstance(original, int | float):
        return _like("number")
    if isinstance(original, str | Ref):
        return _like("text")
    return hostile_value()


@cache
def _like(kind: str) -> st.SearchStrategy[Any]:
    same = {"flag": st.sampled_from((0, 1, "true", "True", "yes", "", None, True, False, [], {})),
            "number": hostile_number(),
            "text": st.one_of(hostile_text(), st.sampled_from(_RAW_STRINGS).map(Raw))}[kind]
    return weighted((3, same), (1, hostile_value()))


@cache
def _numbered(pattern: str, count: int) -> list[str]:
    """`count` distinct names (or uuids): many rows, not one repeated. Shared: never mutate."""
    if pattern == "{:032x}":
        return [str(uuid.UUID(int=n)) for n in range(count)]
    return [pattern.format(n) for n in range(count)]


def _deep(depth: int, opener: str) -> Raw:
    closer = "]" if opener == "[" else "}"
    inner = "[" if opener == "[" else '{"a":'
    return Raw(inner * depth + ("1" if opener == "{" else "") + closer * depth)


@cache
def hostile_value() -> st.SearchStrategy[Any]:
    """Any JSON-ish value: scalars, small containers of them, deep nesting, repeated keys."""
    containers = st.recursive(
        hostile_scalar(),
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.dictionaries(hostile_text(), inner, max_size=4),
            st.lists(st.tuples(st.sampled_from(("a", "name", "")), inner), min_size=2,
                     max_size=3).map(lambda items: Pairs(tuple(items)))),
        max_leaves=8)
    deep = st.builds(_deep, st.sampled_from((33, 200, 1000, 5000)), st.sampled_from("[{"))
    small = st.one_of(st.sampled_from(_INTEGERS[:4]), st.sampled_from(("", "x", "CUSTOM_X")),
                      st.none())
    sizes = st.sampled_from((300, 2000, 40000))
    many = st.one_of(st.builds(lambda value, n: [value] * n, small, sizes),
                     st.builds(_numbered, st.sampled_from(("CUSTOM_FZ_{}", "{:032x}", "k{}")),
                               sizes))
    return st.one_of(containers, deep, many)


# -- paths and queries -------------------------------------------------------------------

_RAW_SEGMENTS = ("%00", "abc%00", "%ff", "%c0%ae", "%2F", "%252F", "%20", "%0A", ".", "..",
                 "%E2%80%AE", "%F0%9F%98%80", "%ED%A0%80", "detail", "action", "0", "-1",
                 "9223372036854775808", "1.5", "00000000-0000-0000-0000-000000000000",
                 "AAAAAAAA-AAAA-AAAA-AAAA-AAAAAAAAAAAA", "a" * 300, "a" * 5000,
                 "not-a-uuid", "CUSTOM_", "custom_x", "admin", "%22%27%3C")


@cache
def _url_text() -> st.SearchStrategy[str]:
    """Hostile text, URL-encoded, short enough for a URL (clients refuse 64 KiB)."""
    return hostile_text().filter(lambda text: 0 < len(text) <= 1000).map(
        lambda text: quote(text, safe=""))


def path_segment(refs: Sequence[str]) -> st.SearchStrategy[str | Ref]:
    """A path parameter: a real id of the seeded world, or something hostile (URL-encoded)."""
    real = st.sampled_from(refs).map(Ref) if refs else st.nothing()
    encoded = _url_text()
    numbers = st.sampled_from(_INTEGERS).map(str)
    return weighted((5, real), (1, numbers), (2, st.sampled_from(_RAW_SEGMENTS)), (2, encoded))


@cache
def query_strings() -> st.SearchStrategy[str]:
    """Usually none; otherwise odd parameters a handler might read by mistake."""
    pair = st.tuples(st.sampled_from(("limit", "marker", "all_projects", "force", "in_tree",
                                      "name", "x", "%00", "")),
                     st.one_of(st.sampled_from(("1", "-1", "%00", "true", "", "%ff", "a" * 500)),
                               _url_text()))
    joined = st.lists(pair, min_size=1, max_size=3).map(
        lambda pairs: "&".join(f"{k}={v}" for k, v in pairs))
    return weighted((8, st.just("")), (2, joined))


# -- bodies -----------------------------------------------------------------------------

Path = tuple[object, ...]


def _paths(value: Any, where: Path = ()) -> list[Path]:
    """Every place in a template that a mutation can touch, the root included."""
    found = [where]
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(_paths(item, (*where, key)))
    elif isinstance(value, list):
        # The first items only: a list of 40,000 needs no 40,000 places to mutate.
        for index, item in enumerate(value[:8]):
            found.extend(_paths(item, (*where, index)))
    return found


def _replace(value: Any, where: Path, change: Callable[[Any], Any]) -> Any:
    """A copy of `value` whose node at `where` is `change(node)`."""
    if not where:
        return change(value)
    head, rest = where[0], where[1:]
    if isinstance(value, dict):
        return {k: (_replace(v, rest, change) if k == head else v) for k, v in value.items()}
    copied = list(value)
    copied[head] = _replace(copied[head], rest, change)  # type: ignore[call-overload]
    return copied


@st.composite
def _mutation(draw: st.DrawFn, template: Any) -> Any:
    """One change at one place of `template`."""
    paths = _paths(template)
    leaves = [p for p in paths if not isinstance(_node(template, p), dict | list)] or paths
    # Leaves first: a hostile value inside a valid body reaches further than a whole new body.
    where = draw(weighted((3, st.sampled_from(leaves)), (1, st.sampled_from(paths))))
    kind = draw(st.sampled_from(("value", "value", "value", "drop", "add", "twice", "rekey",
                                 "wrap")))
    holder = _node(template, where)
    if kind in ("drop", "twice", "rekey") and not (isinstance(holder, dict) and holder):
        kind = "value"
    if kind == "add" and not isinstance(holder, dict):
        kind = "value"
    if kind == "value":
        return _replace(template, where, lambda n: draw(hostile_like(n)))
    if kind == "wrap":
        return _replace(template, where, lambda n: [n])
    return _replace(template, where, lambda n: _change_keys(draw, n, kind))


def _node(value: Any, where: Path) -> Any:
    for step in where:
        value = value[step]
    return value


def _change_keys(draw: st.DrawFn, holder: dict[str, Any], kind: str) -> Any:
    if kind == "add":
        return {**holder, draw(hostile_text()): draw(hostile_value())}
    key = draw(st.sampled_from(list(holder)))
    if kind == "drop":
        return {k: v for k, v in holder.items() if k != key}
    if kind == "twice":
        return Pairs((*holder.items(), (key, draw(hostile_value()))))
    new_key = draw(st.one_of(hostile_text(), st.sampled_from(_RAW_STRINGS).map(Raw)))
    return Pairs(tuple((new_key, v) if k == key else (k, v) for k, v in holder.items()))


@st.composite
def _mutated(draw: st.DrawFn, template: Any) -> Any:
    """One to three mutations; a body already turned into Raw or Pairs is left as it is."""
    body = template
    # Mostly one: every further change is another chance to be refused early.
    for _ in range(draw(weighted((6, st.just(1)), (2, st.just(2)), (1, st.just(3))))):
        if isinstance(body, Raw | Pairs):
            break
        body = draw(_mutation(body))
    return body


@cache
def garbage_body() -> st.SearchStrategy[bytes]:
    """Bytes that are not the JSON a handler expects, or not JSON at all."""
    fixed = (b"", b"{", b"[", b"null", b"[]", b"{}", b'"text"', b"0", b"1e999", b"NaN",
             b"\xff\xfe{", b'{"a": 1} trailing', b"\x00", b'{"a": "\xc3"}', b"\xef\xbb\xbf{}",
             b"[" * 100000 + b"]" * 100000, b'{"a":' * 3000 + b"1" + b"}" * 3000)
    return st.one_of(st.sampled_from(fixed), st.binary(max_size=200))


BodyChoice = tuple[str, Any]


def body_variants(templates: Sequence[Any]) -> st.SearchStrategy[BodyChoice]:
    """("json", value) for a valid or mutated template or a hostile value; ("bytes", raw)."""
    valid = st.sampled_from(templates) if templates else st.just({})
    return weighted((3, valid.map(lambda v: ("json", v))),
                    (10, valid.flatmap(_mutated).map(lambda v: ("json", v))),
                    (2, hostile_value().map(lambda v: ("json", v))),
                    (1, garbage_body().map(lambda b: ("bytes", b))))
