"""The loader's shortcut (depth only, when the raw bytes cannot hide a NUL or a
lone surrogate) answers exactly as the full walk over every string does."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stowage.web import body
from stowage.web.body import MAX_DEPTH, InvalidJSON, load_json


def reference(raw: bytes | str) -> Any:
    """The loader as it was: the standard parser, then the full walk."""
    try:
        data = json.loads(raw, parse_constant=body._no_constant)
    except RecursionError:
        raise InvalidJSON(f"nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:
        raise InvalidJSON(body.shorten(str(exc))) from None
    body._check_tree(data)
    return data


def outcome(load: Any, raw: bytes | str) -> tuple[str, Any]:
    try:
        return "ok", load(raw)
    except InvalidJSON as exc:
        return "invalid", str(exc)


TEXT = st.text(alphabet=st.sampled_from(
    ["a", "Z", "0", "é", "한", "\x00", "\ud800", "\udfff", "\U0001F600", "\\", '"', "\n"]),
    max_size=6)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=12)


def encodings(value: Any) -> list[bytes]:
    """The ways a client may send `value`: escaped, raw UTF-8 (surrogates too), UTF-16."""
    ascii_text = json.dumps(value)
    raw_text = json.dumps(value, ensure_ascii=False)
    return [ascii_text.encode(), raw_text.encode("utf-8", "surrogatepass"),
            raw_text.encode("utf-16", "surrogatepass")]


@settings(max_examples=400, deadline=None)
@given(JSON)
def test_shortcut_and_full_walk_agree(value: Any) -> None:
    for raw in encodings(value):
        assert outcome(load_json, raw) == outcome(reference, raw), raw


@pytest.mark.parametrize("raw", [
    b'{"a": "x\\u0000"}', b'{"\\u0000": 1}', b'["\\ud800"]', b'["\\uDBFF\\uDFFF"]',
    b'["\\\\ud800"]', '["\ud800"]'.encode("utf-8", "surrogatepass"), b'["\xed\x9f\xbf"]',
    b'\xef\xbb\xbf{"a": 1}', b'{"a": 123456789012345678901234567890}',
    ("[" * MAX_DEPTH + "]" * MAX_DEPTH).encode(),
    ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)).encode(),
    ('{"a":' * MAX_DEPTH + "1" + "}" * MAX_DEPTH).encode(),
    ('{"a":' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1)).encode(),
    ("[" * 2000 + "]" * 2000).encode(), b"NaN", b"", b"\xff",
])
def test_edge_bodies_agree(raw: bytes) -> None:
    assert outcome(load_json, raw) == outcome(reference, raw)


def test_plain_utf8_body_skips_the_walk() -> None:
    assert not body._walk_needed(json.dumps({"a": ["é", 1, {"b": None}]},
                                            ensure_ascii=False).encode())
    assert body._walk_needed(b'{"a": "\\u0000"}')
    assert body._walk_needed('{"a": 1}')  # text: the walk, always
