"""Which flavor extra specs are well formed, decided before they are stored.

The scheduler turns some extra specs into a Placement query, so those are
checked on write: a flavor that cannot be scheduled is refused at once rather
than failing every boot later. Nova checks them only from microversion 2.86;
stowage checks these placement-related keys at every version, a little more
strictly than Nova's registry (known classes and traits, non-negative
amounts). Every other key is opaque here; from 2.86 the API first checks all
keys against Nova's registry (``extra_spec_registry``).

=========================  ============================================
key                        value
=========================  ============================================
resources[S]:RC            a non-negative integer amount of class RC
trait[S]:NAME              ``required`` or ``forbidden``
group_policy               ``none`` or ``isolate``
pci_passthrough:alias      ``alias:count[,alias:count...]``
=========================  ============================================

``S`` is an optional request-group suffix (``1``, ``_NET``, ...), as in
Placement 1.33. RC and NAME are standard names or ``CUSTOM_...``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import os_resource_classes as orc
import os_traits

from stowage.errors import Invalid

__all__ = ["validate", "validate_one", "KEY_PATTERN"]

# Nova's schema for any extra spec key (before 2.86 the only check on keys).
KEY_PATTERN = re.compile(r"^[a-zA-Z0-9-_:. ]{1,255}$")
_GROUPED = re.compile(r"^(resources|trait)([a-zA-Z0-9_-]{1,64})?:(.*)$")
_CUSTOM = re.compile(r"^CUSTOM_[A-Z0-9_]+$")
_ALIAS = re.compile(r"^\s*([^:,\s][^:,]*?)\s*:\s*([0-9]+)\s*$")
_STANDARD_TRAITS = frozenset(os_traits.get_traits())


def _fail(key: str, value: str, why: str) -> Invalid:
    return Invalid(f"Validation failed; extra spec {key}={value!r}: {why}.")


def _resource(key: str, name: str, value: str) -> None:
    if name not in orc.STANDARDS and not _CUSTOM.match(name):
        raise _fail(key, value, f"{name!r} is not a standard or CUSTOM_ resource class")
    if not value.strip().isdigit():
        raise _fail(key, value, "the amount must be a non-negative integer")


def _trait(key: str, name: str, value: str) -> None:
    if name not in _STANDARD_TRAITS and not _CUSTOM.match(name):
        raise _fail(key, value, f"{name!r} is not a standard or CUSTOM_ trait")
    if value not in ("required", "forbidden"):
        raise _fail(key, value, "the value must be 'required' or 'forbidden'")


def _pci_alias(key: str, value: str) -> None:
    for item in value.split(","):
        found = _ALIAS.match(item)
        if not found or int(found.group(2)) < 1:
            raise _fail(key, value, "expected alias:count[,alias:count...] with count >= 1")


def validate_one(key: str, value: str) -> None:
    """Raise Invalid when a placement-related key or its value is malformed."""
    grouped = _GROUPED.match(key)
    if grouped:
        prefix, _suffix, name = grouped.groups()
        if prefix == "resources":
            _resource(key, name, value)
        else:
            _trait(key, name, value)
    elif key == "group_policy" and value not in ("none", "isolate"):
        raise _fail(key, value, "the value must be 'none' or 'isolate'")
    elif key == "pci_passthrough:alias":
        _pci_alias(key, value)


def validate(specs: Mapping[str, str]) -> None:
    for key, value in specs.items():
        validate_one(key, value)
