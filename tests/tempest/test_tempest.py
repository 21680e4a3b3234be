"""Tempest's `tempest.api.compute` against a live stowage, as one pytest test.

The test fails on any Tempest failure that `known_failures.txt` does not
list with its reason; the `P/T passed` line is printed at the end of the
session (summary.py). STOWAGE_TEMPEST_REGEX narrows a run by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tempest.suite import RunOptions, known_failures, run_suite, unexpected
from tests.tempest.summary import SUMMARY_PROPERTY


def test_tempest_compute_api(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    outcome = run_suite(tmp_path, RunOptions.from_environ())
    request.node.user_properties.append((SUMMARY_PROPERTY, outcome.summary()))
    assert outcome.total > 0, f"Tempest ran no test; see {tmp_path}/tempest/logs/run.log"
    problems = unexpected(outcome, known_failures())
    if problems:
        lines = [f"{len(problems)} Tempest failure(s) not in known_failures.txt:"]
        for name in sorted(problems):
            lines.append(f"- {name}")
            lines += [f"    {line}" for line in outcome.details.get(name, "").splitlines()[-8:]]
        pytest.fail("\n".join(lines), pytrace=False)
