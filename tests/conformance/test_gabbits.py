"""One pytest test per upstream gabbi YAML file, each on a fresh server.

A file's test fails when any of its gabbi tests fails and is not excused by
``known_failures.txt``; the failure lists the gabbi test names and the first
lines of each message. The outcome counts ride on the report's
``user_properties`` so that ``summary`` can print the P/T table (this also
works under pytest-xdist, where results come back from workers).

Target and database: CONFORMANCE_TARGET, STOWAGE_TEST_DB (see ``settings``).
Every file runs on SQLite. On PostgreSQL and MySQL the files that test only
who may call what (``*-policy``, ``*-legacy-rbac``, ``*-secure-rbac``) or the
HTTP layer (CORS, microversion negotiation, auth, basic HTTP) are left out by
default, since no database code differs there; STOWAGE_CONFORMANCE_FULL=1 runs
every file on every backend.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path

import pytest

from tests.conftest import BACKENDS

from .known import format_problems, load_known_failures, unexpected
from .settings import RunSettings
from .sidevenv import gabbits_dir
from .suite import run_file
from .summary import RESULT_PROPERTY

_FILES = sorted(gabbits_dir().glob("*.yaml"))


def _databases() -> list[str]:
    """STOWAGE_TEST_DB picks one database; otherwise every configured backend."""
    chosen = os.environ.get("STOWAGE_TEST_DB")
    return [chosen] if chosen else list(BACKENDS)


_FULL = os.environ.get("STOWAGE_CONFORMANCE_FULL") == "1"
# Files whose outcome no database changes: access rules and the HTTP layer.
_HTTP_ONLY = ("basic-http", "confirm-auth", "cors", "non-cors", "microversion",
              "microversion-bug-1724065")


def _everywhere(path: Path) -> bool:
    """Run on every backend, not on SQLite only (see the module docstring)."""
    return _FULL or not (path.stem.endswith(("-policy", "-legacy-rbac", "-secure-rbac"))
                         or path.stem in _HTTP_ONLY)


def _cases() -> list[object]:
    return [pytest.param(path, database, id=f"{path.stem}-{database}")
            for path in _FILES for database in _databases()
            if database == "sqlite" or len(_databases()) == 1 or _everywhere(path)]


@pytest.mark.parametrize(("path", "database"), _cases())
def test_gabbi_file(path: Path, database: str, request: pytest.FixtureRequest) -> None:
    settings = RunSettings.from_environ()
    settings = RunSettings(target=settings.target, database=database)
    result = run_file(path, settings)
    request.node.user_properties.append(
        (RESULT_PROPERTY, json.dumps({"database": database, **asdict(result)})))
    problems = unexpected(result, load_known_failures())
    if problems:
        pytest.fail(format_problems(result.file, problems), pytrace=False)
