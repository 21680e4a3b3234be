"""Nova 34.0.0's own Placement-facing functional tests, with stowage as Placement.

One pytest test: it fails on any Nova test failure that `known_failures.txt`
does not list with its reason, and prints `nova: P/T passed` at the end of
the session. STOWAGE_NOVA_FULL=1 runs the whole Placement-facing selection
(about 700 tests) instead of the CI one; STOWAGE_NOVA_REGEX narrows a run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.nova.suite import KNOWN_FAILURES, SUMMARY_PROPERTY, RunOptions, run_suite
from tests.outcomes import report_unexpected


def test_nova_functional_against_stowage_placement(tmp_path: Path,
                                                   request: pytest.FixtureRequest) -> None:
    outcome = run_suite(tmp_path, RunOptions.from_environ())
    request.node.user_properties.append((SUMMARY_PROPERTY, outcome.summary()))
    assert outcome.total > 0, f"Nova's run selected no test; see {tmp_path}"
    report_unexpected(outcome, KNOWN_FAILURES)
