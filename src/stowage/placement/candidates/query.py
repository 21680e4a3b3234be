"""The query string of GET /allocation_candidates, parsed and validated per microversion.

Validation happens in upstream's order, so that a request with several faults
reports the same one upstream reports: the query schema of the microversion,
then the request-wide parameters (``root_required``, ``same_subtree``), then
each request group in query-string order, then cross-group checks.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from stowage.placement import codes
from stowage.placement.api.common import validate_query
from stowage.placement.candidates import params
from stowage.web.errors import HTTPError
from stowage.web.http import Request

__all__ = ["RequestGroup", "CandidateRequest", "parse_request", "schema_for"]

_GROUP_PAT = r"[1-9][0-9]*"
_GROUP_PAT_1_33 = r"[a-zA-Z0-9_-]{1,64}"
_PREFIXES = ("resources", "required", "member_of", "in_tree")
_KEY = re.compile(rf"^({'|'.join(_PREFIXES)})({_GROUP_PAT})?$")
_KEY_1_33 = re.compile(rf"^({'|'.join(_PREFIXES)})({_GROUP_PAT_1_33})?$")


@dataclass
class RequestGroup:
    """Resources and filters; a suffixed group must be satisfied by one provider."""

    suffix: str = ""
    resources: dict[str, int] = field(default_factory=dict)
    # Each set is any-of; the list is all-of.
    required: list[frozenset[str]] = field(default_factory=list)
    forbidden: set[str] = field(default_factory=set)
    # Each set is any-of aggregate uuids; the list is all-of.
    member_of: list[set[str]] = field(default_factory=list)
    forbidden_aggs: set[str] = field(default_factory=set)
    in_tree: str | None = None

    @property
    def use_same_provider(self) -> bool:
        return self.suffix != ""


@dataclass
class CandidateRequest:
    groups: list[RequestGroup]
    group_policy: str | None = None
    limit: int | None = None
    root_required: set[str] = field(default_factory=set)
    root_forbidden: set[str] = field(default_factory=set)
    same_subtrees: list[set[str]] = field(default_factory=list)
    # The requesting microversion's minor number: the engine and the views
    # change behaviour with it (nested awareness, summaries).
    minor: int = 10
    # The request's shape without `limit`, for the memo (search.py fills it once).
    shape: str = field(default="", repr=False, compare=False)


def _schemas() -> dict[int, dict[str, Any]]:
    """Upstream's GET_SCHEMA_1_x for this endpoint, keyed by the minor they start at."""
    s10: dict[str, Any] = {"type": "object", "properties": {"resources": {"type": "string"}},
                           "required": ["resources"], "additionalProperties": False}
    s16 = copy.deepcopy(s10)
    s16["properties"]["limit"] = {"type": ["integer", "string"], "pattern": "^[1-9][0-9]*$",
                                  "minimum": 1, "minLength": 1}
    s17 = copy.deepcopy(s16)
    s17["properties"]["required"] = {"type": ["string"]}
    s21 = copy.deepcopy(s17)
    s21["properties"]["member_of"] = {"type": ["string"]}
    s25 = copy.deepcopy(s21)
    for name in ("resources", "required", "member_of"):
        del s25["properties"][name]
    del s25["required"]
    fmt = "^%s(" + _GROUP_PAT + ")?$"
    s25["patternProperties"] = {fmt % n: {"type": "string"}
                                for n in ("resources", "required", "member_of")}
    s25["properties"]["group_policy"] = {"type": "string", "enum": ["none", "isolate"]}
    s31 = copy.deepcopy(s25)
    s31["patternProperties"][fmt % "in_tree"] = {"type": "string"}
    s33 = copy.deepcopy(s31)
    fmt33 = "^%s(" + _GROUP_PAT_1_33 + ")?$"
    s33["patternProperties"] = {fmt33 % n: {"type": "string"} for n in _PREFIXES}
    s35 = copy.deepcopy(s33)
    s35["properties"]["root_required"] = {"type": ["string"]}
    s36 = copy.deepcopy(s35)
    s36["properties"]["same_subtree"] = {"type": ["string"]}
    return {36: s36, 35: s35, 33: s33, 31: s31, 25: s25, 21: s21, 17: s17, 16: s16, 10: s10}


_SCHEMAS = _schemas()


def schema_for(minor: int) -> dict[str, Any]:
    for start, schema in _SCHEMAS.items():
        if minor >= start:
            return schema
    return _SCHEMAS[10]


def _values(req: Request, key: str) -> list[str]:
    return req.query_values(key)


def _request_wide(req: Request, minor: int) -> CandidateRequest:
    """limit, group_policy, root_required, same_subtree (upstream RequestWideParams)."""
    out = CandidateRequest(groups=[], minor=minor)
    limits = _values(req, "limit")
    if limits:
        out.limit = int(limits[0])
    policies = _values(req, "group_policy")
    if policies:
        out.group_policy = policies[0]
    root_required = _values(req, "root_required")
    if root_required:
        if len(root_required) > 1:
            raise HTTPError(400, "Query parameter 'root_required' may be specified only once.",
                            codes.ILLEGAL_DUPLICATE_QUERYPARAM)
        required, forbidden = params.parse_traits(root_required[0], True, False)
        out.root_required = {name for any_of in required for name in any_of}
        out.root_forbidden = forbidden
        conflicts = out.root_required & forbidden
        if conflicts:
            raise HTTPError(400, "Conflicting required and forbidden traits found in "
                                 f"root_required: {', '.join(sorted(conflicts))}",
                            codes.QUERYPARAM_BAD_VALUE)
    for value in _values(req, "same_subtree"):
        suffixes = {part.strip() for part in value.split(",")}
        if "" in suffixes:
            raise HTTPError(400, "Empty string (unsuffixed group) can not be specified in "
                                 "`same_subtree` ", codes.QUERYPARAM_BAD_VALUE)
        out.same_subtrees.append(suffixes)
    return out


def _parse_groups(req: Request, minor: int) -> dict[str, RequestGroup]:
    pattern = _KEY_1_33 if minor >= 33 else _KEY
    groups: dict[str, RequestGroup] = {}
    for key, value in req.query:
        match = pattern.match(key)
        if not match:
            continue
        prefix, suffix = match.group(1), match.group(2) or ""
        group = groups.setdefault(suffix, RequestGroup(suffix=suffix))
        if prefix == "resources":
            group.resources = params.parse_resources(value)
        elif prefix == "required":
            group.required, group.forbidden = params.parse_traits_values(
                _values(req, key), minor)
        elif prefix == "member_of":
            group.member_of, group.forbidden_aggs = params.parse_member_of_values(
                _values(req, key), suffix, minor)
        else:
            group.in_tree = params.parse_in_tree(value)
    return groups


def _check_same_subtree(groups: dict[str, RequestGroup], subtrees: list[set[str]]) -> None:
    """From 1.36 resourceless groups are legal when named in `same_subtree`."""
    resourceless = [s for s, g in groups.items() if not g.resources]
    if len(resourceless) == len(groups):
        raise HTTPError(400, "There must be at least one resources or resources[$S] "
                             "parameter.", codes.QUERYPARAM_MISSING_VALUE)
    named = set().union(*subtrees) if subtrees else set()
    bad = [s for s in resourceless if s not in named]
    if bad:
        raise HTTPError(400, "Resourceless suffixed group request should be specified in "
                             f"`same_subtree` query param: bad group(s) - {bad}.",
                        codes.QUERYPARAM_BAD_VALUE)
    unknown = [s for s in sorted(named) if s not in groups]
    if unknown:
        raise HTTPError(400, "Real suffixes should be specified in `same_subtree`: "
                             f"{unknown} not found in {list(groups)}.",
                        codes.QUERYPARAM_BAD_VALUE)


def _check_orphans(groups: dict[str, RequestGroup]) -> None:
    """Before 1.36 every group must ask for resources."""
    orphans = [f"required{s}" for s, g in groups.items() if g.required and not g.resources]
    if orphans:
        raise HTTPError(400, "All traits parameters must be associated with resources.  "
                             "Found the following orphaned traits keys: "
                             + ", ".join(orphans))
    orphans = [f"member_of{s}" for s, g in groups.items()
               if not g.resources and (g.member_of or g.forbidden_aggs)]
    if orphans:
        raise HTTPError(400, "All member_of parameters must be associated with resources. "
                             "Found the following orphaned member_of keys: "
                             + ", ".join(orphans))
    if not all(g.resources for g in groups.values()):
        raise HTTPError(400, "All request groups must specify resources.")
    if not groups:
        raise HTTPError(400, "At least one request group (`resources` or `resources{$S}`) "
                             "is required.")


def _check_forbidden(groups: dict[str, RequestGroup]) -> None:
    conflicts = [f"required{s}: ({', '.join(sorted(any_of))})"
                 for s, g in groups.items() for any_of in g.required
                 if all(name in g.forbidden for name in any_of)]
    if conflicts:
        raise HTTPError(400, "Conflicting required and forbidden traits found in the "
                             "following traits keys: " + ", ".join(sorted(conflicts)))


# (minor, query string) -> what it parsed to, for the query strings seen last.
_PARSED: dict[tuple[int, str], CandidateRequest] = {}
_PARSED_MAX = 256


def parse_request(req: Request) -> CandidateRequest:
    """Validate the whole query string; raise HTTPError(400) with upstream's message.

    A scheduler sends the same few query strings over and over, and parsing
    (the JSON-schema check above all) depends on nothing else, so a valid one
    is parsed once. The result is shared: callers must not modify it.
    """
    key = (req.version.minor, req.query_string)
    found = _PARSED.get(key)
    if found is None:
        found = _parse(req)
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        _PARSED[key] = found
    return found


def _parse(req: Request) -> CandidateRequest:
    minor = req.version.minor
    validate_query(req, schema_for(minor))
    out = _request_wide(req, minor)
    groups = _parse_groups(req, minor)
    if minor >= 36:
        _check_same_subtree(groups, out.same_subtrees)
    else:
        _check_orphans(groups)
    if minor >= 22:
        _check_forbidden(groups)
    out.groups = list(groups.values())
    if not out.group_policy and sum(g.use_same_provider for g in out.groups) > 1:
        raise HTTPError(400, 'The "group_policy" parameter is required when specifying '
                             'more than one "resources{N}" parameter.')
    return out
