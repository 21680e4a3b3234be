"""Tempest's `tempest.api.compute` against a live stowage, as one pytest test.

The test fails on any Tempest failure that `known_failures.txt` does not
list with its reason; the suite's `P/T passed` line is printed at the end of
the session (tests/outcomes.py). STOWAGE_TEMPEST_REGEX narrows a run by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tempest.suite import check_suite


def test_tempest_compute_api(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    check_suite("compute", tmp_path, request)
