"""Microversion negotiation: `OpenStack-API-Version: <service> X.Y` (and `latest`).

A missing header means the minimum version; an unparseable one is a 400; a
well-formed version outside the supported range is a 406.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

__all__ = ["Version", "VersionError", "negotiate", "parse"]

STANDARD_HEADER = "openstack-api-version"


class Version(NamedTuple):
    major: int
    minor: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"

    def at_least(self, minor: int, major: int = 1) -> bool:
        return (self.major, self.minor) >= (major, minor)


class VersionError(Exception):
    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status


def parse(text: str) -> Version:
    try:
        major, minor = text.split(".", 1)
        return Version(int(major), int(minor))
    except (ValueError, AttributeError) as exc:
        raise VersionError(400, f"invalid version string: {text}; {exc}") from exc


def requested(headers: Mapping[str, str], service: str,
              legacy_headers: Sequence[str] = ()) -> str | None:
    """The version string asked for `service`; the last matching entry wins."""
    value = headers.get(STANDARD_HEADER)
    if value:
        for item in reversed(value.split(",")):
            parts = item.strip().split(None, 1)
            if len(parts) == 2 and parts[0].lower() == service.lower():
                return parts[1].strip()
    for name in legacy_headers:
        legacy = headers.get(name)
        if legacy:
            return legacy.split(",")[-1].strip()
    return None


def negotiate(headers: Mapping[str, str], service: str, versions: Sequence[str],
              legacy_headers: Sequence[str] = ()) -> Version:
    text = requested(headers, service, legacy_headers) or versions[0]
    if text == "latest":
        text = versions[-1]
    version = parse(text)
    if str(version) not in versions:
        raise VersionError(406, f"Unacceptable version header: {text}")
    return version
