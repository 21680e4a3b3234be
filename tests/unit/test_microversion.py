"""Microversion negotiation and the version list."""

from __future__ import annotations

import pytest

from stowage.placement.versions import VERSIONS
from stowage.web.microversion import Version, VersionError, negotiate


def test_latest_placement_version_is_1_39() -> None:
    assert VERSIONS[-1] == "1.39"
    assert VERSIONS[0] == "1.0"
    assert len(VERSIONS) == 40


@pytest.mark.parametrize(("header", "expected"), [
    (None, Version(1, 0)),
    ("placement 1.17", Version(1, 17)),
    ("placement latest", Version(1, 39)),
    ("compute 2.1, placement 1.5", Version(1, 5)),
    ("placement 1.2, placement 1.30", Version(1, 30)),
])
def test_negotiate(header: str | None, expected: Version) -> None:
    headers = {"openstack-api-version": header} if header else {}
    assert negotiate(headers, "placement", VERSIONS) == expected


@pytest.mark.parametrize(("header", "status"), [
    ("placement 1.40", 406), ("placement 2.0", 406), ("placement 0.9", 406),
    ("placement 1.a", 400), ("placement one", 400),
])
def test_negotiate_errors(header: str, status: int) -> None:
    with pytest.raises(VersionError) as info:
        negotiate({"openstack-api-version": header}, "placement", VERSIONS)
    assert info.value.status == status


def test_other_service_header_is_ignored() -> None:
    assert negotiate({"openstack-api-version": "compute 2.90"}, "placement",
                     VERSIONS) == Version(1, 0)
