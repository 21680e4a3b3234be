"""The compiled schema check accepts exactly what jsonschema accepts, for every
Placement schema, and a rejected body gets jsonschema's own error.

The corpus: for each schema a valid body built from the schema itself, then
every node of it replaced by values of every JSON type and by boundary
values (lengths, minimums, patterns, formats, a trailing newline), every key
removed, unknown and near-miss keys added; hypothesis then inserts random JSON
anywhere in the valid body. On each body the generated code's verdict must
equal the reference validator's.
"""

from __future__ import annotations

import copy
import importlib
import json
import pkgutil
import re
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stowage.placement.api as placement_api
from stowage.placement.api import allocations, common, reshaper
from stowage.web import compiled_schema
from stowage.web.compiled_schema import CompiledSchema, is_compilable

MINORS = range(0, 40)
UUID = "7a5d0e4c-1b0f-4a44-9a53-0a3a0c1c2f11"
# Keys and strings tried for a pattern, in order; the first that matches is used.
PATTERN_SAMPLES = ["VCPU", UUID, "CUSTOM_GOLD", "HW_CPU_X86_AVX", "g1", "a", "1"]


def placement_schemas() -> dict[str, Mapping[str, Any]]:
    """Every schema a Placement handler validates with, by a readable name (the first
    name of each distinct schema: most microversions share one)."""
    found: dict[str, Mapping[str, Any]] = {}
    for info in pkgutil.iter_modules(placement_api.__path__):
        module = importlib.import_module(f"{placement_api.__name__}.{info.name}")
        for name, value in vars(module).items():
            if (isinstance(value, dict) and not name.startswith("__")
                    and ("type" in value or "properties" in value)):
                found[f"{info.name}.{name}"] = value
    for minor in MINORS:
        found[f"allocations.put_schema({minor})"] = allocations.put_schema(minor)
        found[f"allocations.post_schema({minor})"] = allocations.post_schema(minor)
        found[f"reshaper.schema({minor})"] = reshaper.schema(minor)
    distinct: dict[str, tuple[str, Mapping[str, Any]]] = {}
    for name, schema in found.items():
        distinct.setdefault(json.dumps(schema, sort_keys=True), (name, schema))
    return dict(distinct.values())


SCHEMAS = placement_schemas()


def _matching(pattern: str, low: int = 0, high: int = 10**6) -> str:
    for sample in PATTERN_SAMPLES:
        if re.search(pattern, sample) and low <= len(sample) <= high:
            return sample
    raise AssertionError(f"no sample matches {pattern!r}")


def example(schema: Mapping[str, Any]) -> Any:
    """A body the schema accepts, built from its keywords."""
    if "anyOf" in schema:
        return example(schema["anyOf"][0])
    kind = schema.get("type", "object")
    kind = kind[0] if isinstance(kind, list) else kind
    if kind == "object":
        body = {key: example(sub) for key, sub in schema.get("properties", {}).items()}
        for pattern, sub in schema.get("patternProperties", {}).items():
            body[_matching(pattern)] = example(sub)
        return body
    if kind == "array":
        count = max(schema.get("minItems", 1), 1)
        item = schema.get("items", {})
        if item.get("format") == "uuid":
            return [str(uuid.uuid4()) for _ in range(count)]
        return [example(item) for _ in range(count)]
    if kind == "string":
        if schema.get("format") == "uuid":
            return UUID
        low, high = schema.get("minLength", 0), schema.get("maxLength", 10**6)
        if "enum" in schema:
            return schema["enum"][0]
        if "pattern" in schema:
            return _matching(schema["pattern"], low, high)
        return "x" * max(low, 1)
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    return {"null": None, "boolean": True}[kind]


ODD_VALUES: list[Any] = [
    None, True, False, 0, -1, 1, 2, 1.0, 1.5, -0.0, 2**31, 2**70, "", "x", "VCPU", "vcpu",
    "VCPU\n", "CUSTOM_GOLD\n", UUID, UUID.replace("-", ""), UUID.upper(), UUID + "\n",
    UUID[:-1], "{" + UUID + "}", "urn:uuid:" + UUID, "not-a-uuid", "a" * 255, "a" * 256,
    "é" * 255, "ü" * 256, [], [1], [UUID], [UUID, UUID], ["x"], {}, {"a": 1}, {"VCPU": 1},
    {UUID: {}},
]


def _boundaries(schema: Mapping[str, Any]) -> list[Any]:
    values: list[Any] = []
    for key in ("minimum", "maximum"):
        if key in schema:
            values += [schema[key] - 1, schema[key], schema[key] + 1, float(schema[key])]
    for key in ("minLength", "maxLength"):
        if key in schema:
            values += ["a" * max(schema[key] + d, 0) for d in (-1, 0, 1)]
    if "pattern" in schema:
        sample = _matching(schema["pattern"], 0)
        values += [sample + "\n", "\n" + sample, sample.lower(), sample + "-", " " + sample]
    return values


def _nodes(value: Any, schema: Mapping[str, Any] | None,
           path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Mapping[str, Any]]]:
    """(path, schema at that path, as far as it is known) of every node of `value`."""
    here = schema or {}
    yield path, here
    if isinstance(value, dict):
        for key, item in value.items():
            sub = here.get("properties", {}).get(key)
            for pattern, candidate in here.get("patternProperties", {}).items():
                if sub is None and re.search(pattern, key):
                    sub = candidate
            yield from _nodes(item, sub, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _nodes(item, here.get("items"), (*path, index))


def _replace(body: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copied = copy.deepcopy(body)
    parent = copied
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = new
    return copied


def _edit_dict(body: Any, path: tuple[Any, ...]) -> Iterator[Any]:
    """The dict at `path` with a key removed, one added, one renamed."""
    target = body
    for part in path:
        target = target[part]
    for key in list(target):
        smaller = dict(target)
        del smaller[key]
        yield _replace(body, path, smaller)
        for renamed in (key + "\n", key.lower(), key + "x"):
            moved = dict(smaller)
            moved[renamed] = target[key]
            yield _replace(body, path, moved)
        yield _replace(body, path, {**target, key: copy.deepcopy(target[key])})
    some = next(iter(target.values()), 1)
    for extra in ("extra", "VCPU", "VCPU\n", UUID, "g1", "a" * 65, ""):
        for value in (some, 1, "x", {}):
            yield _replace(body, path, {**target, extra: copy.deepcopy(value)})


def _edit_list(body: Any, path: tuple[Any, ...]) -> Iterator[Any]:
    target = body
    for part in path:
        target = target[part]
    yield _replace(body, path, [])
    if target:
        yield _replace(body, path, target + [copy.deepcopy(target[0])])
        yield _replace(body, path, target + [1])
        yield _replace(body, path, target + [str(uuid.uuid4())])


def corpus(schema: Mapping[str, Any]) -> Iterator[Any]:
    valid = example(schema)
    yield valid
    for path, sub in list(_nodes(valid, schema)):
        for value in ODD_VALUES + _boundaries(sub):
            yield _replace(valid, path, copy.deepcopy(value))
        node = valid
        for part in path:
            node = node[part]
        if isinstance(node, dict):
            yield from _edit_dict(valid, path)
        elif isinstance(node, list):
            yield from _edit_list(valid, path)


def reference_accepts(checked: CompiledSchema, body: Any) -> bool:
    return not any(True for _ in checked.reference.iter_errors(body))


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_every_placement_schema_is_compiled(name: str) -> None:
    """All of them take the fast path; none is left to jsonschema alone."""
    assert is_compilable(SCHEMAS[name])
    assert compiled_schema.compiled(SCHEMAS[name], common._FORMATS).is_compiled


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_compiled_and_jsonschema_agree_on_the_corpus(name: str) -> None:
    schema = SCHEMAS[name]
    checked = CompiledSchema(schema, common._FORMATS)
    bodies = list(corpus(schema))
    assert reference_accepts(checked, bodies[0]), "the example body must be valid"
    verdicts = {True: 0, False: 0}
    for body in bodies:
        expected = reference_accepts(checked, body)
        compiled = checked.compiled_accepts(body)
        assert compiled == expected, (
            f"{name}: compiled says {compiled}, jsonschema says {expected} on {body!r}")
        verdicts[expected] += 1
    assert verdicts[True] >= 1 and verdicts[False] >= 10


@pytest.mark.parametrize("name", ["allocations.post_schema(38)", "inventories.PUT_SCHEMA",
                                  "providers.POST_SCHEMA_1_14", "aggregates.PUT_SCHEMA_1_19"])
def test_a_rejected_body_gets_jsonschemas_first_error(name: str) -> None:
    schema = SCHEMAS[name]
    checked = compiled_schema.compiled(schema, common._FORMATS)
    reference = jsonschema.Draft4Validator(schema, format_checker=common._FORMATS)
    rejected = 0
    for body in corpus(schema):
        try:
            reference.validate(body)
        except jsonschema.ValidationError as expected:
            with pytest.raises(jsonschema.ValidationError) as got:
                checked.validate(body)
            assert (got.value.message, list(got.value.path), list(got.value.schema_path)) == (
                expected.message, list(expected.path), list(expected.schema_path))
            rejected += 1
        else:
            checked.validate(body)
    assert rejected > 10


def test_a_final_dollar_matches_before_a_trailing_newline_as_in_re() -> None:
    """jsonschema (re.search) accepts "VCPU\\n" for "^[A-Z]+$", and so must the compiled
    check, both as a `pattern` and as a `patternProperties` key of the same text."""
    schema = {"type": "object", "properties": {"name": {"type": "string", "pattern": "^[A-Z]+$"}},
              "patternProperties": {"^[A-Z]+$": {"type": "integer"}}}
    checked = CompiledSchema(schema)
    assert checked.compiled_accepts({"name": "VCPU\n", "DISK\n": 1})
    assert not checked.compiled_accepts({"name": "VCPU\n\n"})
    assert not checked.compiled_accepts({"DISK\n": "x"})
    assert not checked.reference.is_valid({"DISK\n": "x"})


@pytest.mark.parametrize(("schema", "body", "valid"), [
    ({"enum": [1, 2]}, True, False),  # 1 == True in Python, not in JSON Schema
    ({"type": "array", "uniqueItems": True}, [1, True], True),
    ({"type": "array", "items": [{"type": "string"}]}, [1], False),
    ({"definitions": {"x": {"type": "integer"}},
      "properties": {"a": {"$ref": "#/definitions/x"}}}, {"a": "s"}, False),
    ({"type": "number", "multipleOf": 2}, 3, False),
])
def test_keywords_that_could_disagree_stay_with_jsonschema(
        schema: dict[str, Any], body: Any, valid: bool) -> None:
    checked = CompiledSchema(schema)
    assert not checked.is_compiled
    if valid:
        checked.validate(body)
    else:
        with pytest.raises(jsonschema.ValidationError):
            checked.validate(body)


def test_no_format_checker_means_formats_are_ignored_as_by_jsonschema() -> None:
    schema = {"type": "string", "format": "uuid"}
    assert CompiledSchema(schema).compiled_accepts("not-a-uuid")
    assert not CompiledSchema(schema, common._FORMATS).compiled_accepts("not-a-uuid")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2**40, 2**40) | st.floats(allow_nan=False)
    | st.sampled_from(["", "VCPU", UUID, "x\n", "a" * 256]) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(["VCPU", UUID, "total", "resources", "x"])
                      | st.text(max_size=5), inner, max_size=3),
    max_leaves=8)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(SCHEMAS)), data=st.data())
def test_random_json_anywhere_in_a_valid_body(name: str, data: st.DataObject) -> None:
    schema = SCHEMAS[name]
    checked = compiled_schema.compiled(schema, common._FORMATS)
    valid = example(schema)
    paths = [path for path, _ in _nodes(valid, schema)]
    path = data.draw(st.sampled_from(paths))
    body = _replace(valid, path, data.draw(JSON))
    expected = reference_accepts(checked, body)
    compiled = checked.compiled_accepts(body)
    assert compiled == expected, (name, body)


@pytest.mark.parametrize(("pattern", "compilable"), [
    ("^[A-Z0-9_]+$|^all|^unknown$", True),
    ("^a\\$b$", True),
    ("^[$]+$", False),
    ("^[]$]+$", False),
    ("^[^]$]+$", False),
    ("^[^]a]$", True),
])
def test_dollar_anchors_are_respelt_and_dollar_members_left_to_jsonschema(
        pattern: str, compilable: bool) -> None:
    schema = {"type": "string", "pattern": pattern}
    assert is_compilable(schema) is compilable
    checked = CompiledSchema(schema)
    for text in ("all", "unknown\n", "a$b", "a$b\n", "$$", "]", "b\n", "A", "all\n\n"):
        assert checked.compiled_accepts(text) is (compilable and checked.reference.is_valid(text))


def test_a_schema_fastjsonschema_cannot_read_is_left_to_jsonschema() -> None:
    schema = {"type": "string", "maxLength": "ten"}  # jsonschema reads it, and then fails
    checked = CompiledSchema(schema)
    assert not checked.is_compiled
    with pytest.raises(TypeError):
        checked.validate("x")
