"""GET /allocation_candidates query parsing: upstream's messages and codes per microversion."""

from __future__ import annotations

import pytest

from stowage.placement import codes
from stowage.web.errors import HTTPError
from tests.unit.candidates_builders import request

AGG = "11111111-1111-1111-1111-111111111111"


def _error(qs: str, minor: int = 39) -> HTTPError:
    with pytest.raises(HTTPError) as info:
        request(qs, minor)
    return info.value


def test_groups_and_request_wide_params() -> None:
    req = request(f"resources=VCPU:1&required=A,!B&required=in:C,D&member_of=in:{AGG}"
                  f"&member_of=!{AGG}&resources_X=DISK_GB:2&group_policy=isolate&limit=3"
                  "&root_required=E,!F")
    first, second = req.groups
    assert first.resources == {"VCPU": 1}
    assert first.required == [frozenset({"A"}), frozenset({"C", "D"})]
    assert first.forbidden == {"B"}
    assert first.member_of == [{AGG}] and first.forbidden_aggs == {AGG}
    assert second.suffix == "_X" and second.use_same_provider
    assert (req.group_policy, req.limit) == ("isolate", 3)
    assert (req.root_required, req.root_forbidden) == ({"E"}, {"F"})


@pytest.mark.parametrize(("qs", "minor", "text"), [
    ("resources=VCPU:1&foo=bar", 39, "Invalid query string parameters: 'foo' does not match"),
    ("resources=VCPU:1&foo=bar", 24, "Invalid query string parameters: Additional properties"),
    ("resources=VCPU:1&limit=0", 39, "Invalid query string parameters"),
    ("resources=VCPU:1&required=in:A,B", 38, "only supported since microversion 1.39"),
    ("resources=VCPU:1&required=!A", 21, "Invalid query string parameters"),
    ("resources=VCPU:1&required=!A", 17, "Expected 'required' parameter value of the form"),
    ("resources=VCPU", 39, "Badly formed resources parameter"),
    ("resources=VCPU:0", 39, "requires amount >= 1. Got: 0."),
    ("resources=VCPU:x", 39, "expected positive integer amount. Got: x."),
    ("resources1=VCPU:1&resources2=VCPU:1", 39, 'The "group_policy" parameter is required'),
    ("resources=VCPU:1&required=A&required=!A", 39, "Conflicting required and forbidden"),
    ("resources=VCPU:1&member_of=a,b", 39, "must be prefixed with the 'in:'"),
    ("resources=VCPU:1&member_of=nope", 39, "to contain valid UUID(s). Got: nope"),
    (f"resources=VCPU:1&member_of={AGG}&member_of={AGG}", 23,
     "Multiple member_of parameters are not supported"),
    (f"resources=VCPU:1&member_of=!{AGG}", 31, "Forbidden member_of parameters"),
    ("resources=VCPU:1&in_tree=bad", 39, "to be a format of uuid. Got: bad"),
    ("required=A&resources1=VCPU:1", 35, "orphaned traits keys: required"),
    ("resources1=VCPU:1&required2=A&group_policy=none", 39,
     "bad group(s) - ['2']"),
    ("resources=VCPU:1&same_subtree=_A", 39, "Real suffixes should be specified"),
    ("group_policy=none&required_A=X&same_subtree=_A", 39, "There must be at least one"),
])
def test_errors(qs: str, minor: int, text: str) -> None:
    assert text in _error(qs, minor).detail


def test_error_codes() -> None:
    err = _error("resources=VCPU:1&root_required=A&root_required=B")
    assert err.code == codes.ILLEGAL_DUPLICATE_QUERYPARAM
    err = _error("resources=VCPU:1&root_required=A,!A")
    assert err.code == codes.QUERYPARAM_BAD_VALUE
    assert _error("required_A=X&same_subtree=_A").code == codes.QUERYPARAM_MISSING_VALUE


def test_suffix_shapes_per_microversion() -> None:
    assert request("resources1=VCPU:1", 25).groups[0].suffix == "1"
    assert "Invalid query string" in _error("resources_A=VCPU:1", 32).detail
    assert request("resources_A-b=VCPU:1", 33).groups[0].suffix == "_A-b"
    assert "Invalid query string" in _error("resources01=VCPU:1", 25).detail


def test_required_before_1_39_keeps_last_value() -> None:
    assert request("resources=VCPU:1&required=A&required=B", 38).groups[0].required == [
        frozenset({"B"})]
