"""What a conformance run talks to, read once from the environment.

Environment variables (both optional):

    CONFORMANCE_TARGET  stowage (default) | upstream
    STOWAGE_TEST_DB     sqlite (default) | postgresql | mysql

The upstream target exists to validate the bridge itself: with it, the suite
should pass (nearly) completely, which proves the fixtures re-create
upstream's data faithfully over HTTP.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = ["DATABASES", "TARGETS", "RunSettings"]

TARGETS = ("stowage", "upstream")
DATABASES = ("sqlite", "postgresql", "mysql")


@dataclass(frozen=True)
class RunSettings:
    target: str = "stowage"
    database: str = "sqlite"

    def __post_init__(self) -> None:
        if self.target not in TARGETS:
            raise ValueError(f"CONFORMANCE_TARGET must be one of {TARGETS}")
        if self.database not in DATABASES:
            raise ValueError(f"STOWAGE_TEST_DB must be one of {DATABASES}")

    @classmethod
    def from_environ(cls, target: str | None = None) -> RunSettings:
        return cls(
            target=target or os.environ.get("CONFORMANCE_TARGET", "stowage"),
            database=os.environ.get("STOWAGE_TEST_DB", "sqlite"),
        )
