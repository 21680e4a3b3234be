"""Parsers for single query-string values shared by /allocation_candidates and
/resource_providers: resources, required traits, member_of, in_tree.

The messages are upstream Placement's (``placement/util.py``) word for word,
because clients and the upstream test suite match on them.
"""

from __future__ import annotations

import uuid as uuidlib

from stowage.web.errors import HTTPError

__all__ = ["parse_resources", "parse_traits", "parse_traits_values", "parse_member_of",
           "parse_member_of_values", "parse_in_tree", "is_uuid_like"]

Traits = tuple[list[frozenset[str]], set[str]]


def is_uuid_like(value: str) -> bool:
    """oslo's is_uuid_like: any form python's UUID accepts that round-trips."""
    try:
        canonical = (value.replace("urn:", "").replace("uuid:", "").strip("{}")
                     .replace("-", "").lower())
        return str(uuidlib.UUID(value)).replace("-", "") == canonical
    except (TypeError, ValueError, AttributeError):
        return False


def parse_resources(value: str) -> dict[str, int]:
    """`VCPU:2,MEMORY_MB:1024` -> {"VCPU": 2, "MEMORY_MB": 1024}."""
    form = ("Badly formed resources parameter. Expected resources query string "
            "parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. Got: {}.")
    if value.strip() == "":
        raise HTTPError(400, form.format("empty string"))
    result: dict[str, int] = {}
    for item in value.split(","):
        parts = item.split(":")
        if len(parts) != 2:
            raise HTTPError(400, form.format(item))
        name, raw = parts
        try:
            amount = int(raw)
        except ValueError:
            raise HTTPError(400, f"Requested resource {name} expected positive integer "
                                 f"amount. Got: {raw}.") from None
        if amount < 1:
            raise HTTPError(400, f"Requested resource {name} requires amount >= 1. "
                                 f"Got: {amount}.")
        result[name] = amount
    return result


def _parse_any_traits(value: str) -> Traits:
    any_traits = frozenset(t.strip() for t in value[3:].split(","))
    if not all(any_traits):
        raise HTTPError(400, "Invalid query string parameters: Expected 'required' parameter "
                             "value of the form: in:HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an "
                             f"empty trait in: {value}")
    if any(t.startswith("!") for t in any_traits):
        raise HTTPError(400, "Invalid query string parameters: The format "
                             "'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' does not support forbidden "
                             f"traits. Got: {value}")
    return [any_traits], set()


def parse_traits(value: str, allow_forbidden: bool, allow_any: bool) -> Traits:
    """One `required` value -> (list of any-of sets, forbidden set)."""
    if value.startswith("in:"):
        if not allow_any:
            raise HTTPError(400, "Invalid query string parameters: The format "
                                 "'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported since "
                                 f"microversion 1.39. Got: {value}")
        return _parse_any_traits(value)
    names = [t.strip() for t in value.split(",")]
    # Like upstream, any run of leading '!' marks a forbidden trait.
    forbidden = {t.lstrip("!") for t in names if t.startswith("!")}
    if not all(names) or not all(forbidden):
        form = "HW_CPU_X86_VMX,!CUSTOM_MAGIC" if allow_forbidden else \
            "HW_CPU_X86_VMX,CUSTOM_MAGIC"
        raise HTTPError(400, "Invalid query string parameters: Expected 'required' parameter "
                             f"value of the form: {form}. Got an empty trait in: {value}")
    if forbidden and not allow_forbidden:
        raise HTTPError(400, "Invalid query string parameters: Expected 'required' parameter "
                             f"value of the form: HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: {value}")
    return [frozenset({t}) for t in names if not t.startswith("!")], forbidden


def parse_traits_values(values: list[str], minor: int) -> Traits:
    """All values of one `required<S>` key; before 1.39 only the last one counts."""
    if minor < 39:
        values = values[-1:]
    required: list[frozenset[str]] = []
    forbidden: set[str] = set()
    for value in values:
        req, forb = parse_traits(value, minor >= 22, minor >= 39)
        required += req
        forbidden |= forb
    return required, forbidden


def parse_member_of(value: str) -> tuple[set[str], set[str]]:
    """One `member_of` value -> (any-of required aggregates, forbidden aggregates)."""
    if "," in value and not (value.startswith("in:") or value.startswith("!in:")):
        raise HTTPError(400, "Multiple values for 'member_of' must be prefixed with the "
                             "'in:' or '!in:' keyword using the valid microversion. "
                             f"Got: {value}")
    required: set[str] = set()
    forbidden: set[str] = set()
    if value.startswith("!in:"):
        forbidden = set(value[4:].split(","))
    elif value.startswith("!"):
        forbidden = {value[1:]}
    elif value.startswith("in:"):
        required = set(value[3:].split(","))
    else:
        required = {value}
    for agg in sorted(required | forbidden):
        if not is_uuid_like(agg):
            raise HTTPError(400, "Invalid query string parameters: Expected 'member_of' "
                                 f"parameter to contain valid UUID(s). Got: {agg}")
    return required, forbidden


def parse_member_of_values(values: list[str], suffix: str,
                           minor: int) -> tuple[list[set[str]], set[str]]:
    """All values of one `member_of<S>` key (repeatable from 1.24, `!` from 1.32)."""
    if minor < 24 and len(values) > 1:
        raise HTTPError(400, f"Multiple member_of{suffix} parameters are not supported")
    required: list[set[str]] = []
    forbidden: set[str] = set()
    for value in values:
        req, forb = parse_member_of(value)
        if req:
            required.append(req)
        if forb:
            if minor < 32:
                raise HTTPError(400, f"Forbidden member_of{suffix} parameters are not "
                                     "supported in the specified microversion")
            forbidden |= forb
    return required, forbidden


def parse_in_tree(value: str) -> str:
    stripped = value.strip()
    if not is_uuid_like(stripped):
        raise HTTPError(400, "Invalid query string parameters: Expected 'in_tree' parameter "
                             f"to be a format of uuid. Got: {value}")
    return stripped
