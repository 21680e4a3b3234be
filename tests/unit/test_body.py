"""The web layer's defences: the shared JSON loader's limits, schema failures reported
with bounded values, NUL in paths and queries, bounded details, refused values."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
import sqlalchemy.exc

from stowage.context import RequestContext
from stowage.web import schema_report
from stowage.web.app import ServiceApp, ServiceSpec
from stowage.web.body import MAX_DEPTH, InvalidJSON, load_json
from stowage.web.errors import DETAIL_LIMIT, HTTPError, shorten
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route, Router


def nested(levels: int) -> str:
    return "[" * levels + "]" * levels


def test_plain_bodies_load() -> None:
    assert load_json(b'{"name": "caf\\u00e9", "n": [1, 2.5, null, true]}') == {
        "name": "café", "n": [1, 2.5, None, True]}
    assert load_json(nested(MAX_DEPTH)) == load_json(nested(MAX_DEPTH))


@pytest.mark.parametrize(("raw", "reason", "path"), [
    (b'{"a": "\\ud800"}', "lone surrogate not allowed (invalid Unicode)", "a"),
    (b'{"a": [1, {"b": "x\\udc00y"}]}', "lone surrogate not allowed (invalid Unicode)",
     "a/1/b"),
    (b'{"a": {"\\ud83d": 1}}', "lone surrogate not allowed (invalid Unicode) in a key", "a"),
    (b'{"a": "x\\u0000"}', "NUL character not allowed", "a"),
    (b'{"\\u0000": 1}', "NUL character not allowed in a key", ""),
])
def test_unstorable_strings_are_named_with_their_place(raw: bytes, reason: str,
                                                       path: str) -> None:
    with pytest.raises(InvalidJSON) as caught:
        load_json(raw)
    assert (caught.value.reason, caught.value.path) == (reason, path)


def test_a_proper_surrogate_pair_is_fine() -> None:
    assert load_json(b'"\\ud83d\\ude00"') == "\U0001F600"


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 999, 1000, 100_000])
def test_deep_nesting_is_refused_without_recursion_errors(levels: int) -> None:
    with pytest.raises(InvalidJSON, match="nested deeper than"):
        load_json(nested(levels))


@pytest.mark.parametrize("raw", [b"", b"{", b'{"a": NaN}', b"[Infinity]", b"-Infinity",
                                 b"\xff\xfe{}", b"1" * 5000])
def test_not_json(raw: bytes) -> None:
    with pytest.raises(InvalidJSON) as caught:
        load_json(raw)
    assert caught.value.path == "" and len(str(caught.value)) <= 210


def test_shorten() -> None:
    assert shorten("abc", 3) == "abc"
    assert shorten("abcd", 3) == "abc..."


def schema_error(instance: object, schema: dict[str, object]) -> jsonschema.ValidationError:
    with pytest.raises(jsonschema.ValidationError) as caught:
        jsonschema.Draft4Validator(schema).validate(instance)
    return caught.value


def test_messages_quote_huge_values_briefly_and_keep_their_words() -> None:
    huge = "x" * 1_000_000
    err = schema_error({"name": huge}, {"properties": {"name": {"maxLength": 5}}})
    assert schema_report.message(err).endswith("is too long")
    assert len(schema_report.message(err)) < 500
    text = schema_report.verbose(err)
    assert len(text) < 2_000
    assert "Failed validating 'maxLength' in schema['properties']['name']" in text
    assert "On instance['name']:" in text
    err = schema_error({huge: 1}, {"additionalProperties": False})
    assert schema_report.message(err).startswith("Additional properties are not allowed")
    assert schema_report.message(err).endswith("was unexpected)")
    assert len(schema_report.verbose(err)) < 2_000
    assert len(schema_report.quoted([huge] * 1000)) <= 210


def test_verbose_matches_jsonschema_for_small_values() -> None:
    err = schema_error({"total": "x"}, {"properties": {"total": {"type": "integer"}}})
    assert schema_report.verbose(err) == str(err)


def _ok(req: Request) -> Response:
    return Response(200)


def _refused_by_the_database(req: Request) -> Response:
    raise sqlalchemy.exc.DataError("INSERT ...", {}, ValueError("value out of range"))


def _long_detail(req: Request) -> Response:
    raise HTTPError(400, "No such trait(s): " + "CUSTOM_X, " * 100_000)


def _render(req: Request, err: HTTPError, versioned: bool) -> Response:
    return json_response({"error": {"status": err.status, "detail": err.detail}}, err.status)


APP = ServiceApp(ServiceSpec(
    service_type="test", versions=("1.0",), microversioned=False, render_error=_render,
    authenticate=lambda req: RequestContext(),
    router=Router([Route("GET", "/things/{id}", _ok),
                   Route("POST", "/refused", _refused_by_the_database),
                   Route("GET", "/long", _long_detail)])), state=None)


def call(method: str, path: str, query: str = "") -> tuple[int, dict[str, Any]]:
    resp = APP.respond(Request(method=method, path=path, query_string=query, headers={},
                               body=b"", base_url="http://test"))
    return resp.status, json.loads(resp.body) if resp.body else {}


def test_nul_in_a_path_is_not_found_on_every_route() -> None:
    assert call("GET", "/things/a")[0] == 200
    for path in ("/things/\x00", "/things/a\x00b", "/\x00", "/refused\x00"):
        assert call("GET", path)[0] == 404
        assert call("POST", path)[0] == 404


@pytest.mark.parametrize("query", ["a=%00", "%00=1", "a=1&b=x%00y"])
def test_nul_in_a_query_is_a_bad_request(query: str) -> None:
    status, body = call("GET", "/things/a", query)
    assert status == 400 and "NUL" in body["error"]["detail"]


def test_a_value_the_database_refuses_is_a_bad_request() -> None:
    status, body = call("POST", "/refused")
    assert status == 400
    assert body["error"]["detail"] == "Invalid input: a value cannot be stored."


def test_every_error_detail_is_bounded() -> None:
    status, body = call("GET", "/long")
    assert status == 400
    assert len(body["error"]["detail"]) <= DETAIL_LIMIT + 3
    assert body["error"]["detail"].startswith("No such trait(s): CUSTOM_X, ")
