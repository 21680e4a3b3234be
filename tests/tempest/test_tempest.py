"""Tempest's `tempest.api.compute` against a live stowage, as one pytest test.

The test fails on any Tempest failure that `known_failures.txt` does not
list with its reason; the `P/T passed` line is printed at the end of the
session (tests/outcomes.py). STOWAGE_TEMPEST_REGEX narrows a run by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.outcomes import report_unexpected
from tests.tempest.suite import KNOWN_FAILURES, SUMMARY_PROPERTY, RunOptions, run_suite


def test_tempest_compute_api(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    outcome = run_suite(tmp_path, RunOptions.from_environ())
    request.node.user_properties.append((SUMMARY_PROPERTY, outcome.summary()))
    assert outcome.total > 0, f"Tempest ran no test; see {tmp_path}/tempest/logs/run.log"
    report_unexpected(outcome, KNOWN_FAILURES)
