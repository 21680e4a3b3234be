"""One pytest test per upstream gabbi YAML file, each on a fresh server.

A file's test fails when any of its gabbi tests fails and is not excused by
``known_failures.txt``; the failure lists the gabbi test names and the first
lines of each message. The outcome counts ride on the report's
``user_properties`` so that ``summary`` can print the P/T table (this also
works under pytest-xdist, where results come back from workers).

Target and database: CONFORMANCE_TARGET, STOWAGE_TEST_DB (see ``settings``).
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


@pytest.mark.parametrize("database", _databases())
@pytest.mark.parametrize("path", _FILES, ids=[p.stem for p in _FILES])
def test_gabbi_file(path: Path, database: str, request: pytest.FixtureRequest) -> None:
    settings = RunSettings.from_environ()
    settings = RunSettings(target=settings.target, database=database)
    result = run_file(path, settings)
    request.node.user_properties.append(
        (RESULT_PROPERTY, json.dumps({"database": database, **asdict(result)})))
    problems = unexpected(result, load_known_failures())
    if problems:
        pytest.fail(format_problems(result.file, problems), pytrace=False)
