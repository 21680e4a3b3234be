"""Nova 34.0.0's own Placement-facing functional tests, with stowage as Placement.

One pytest test per database: the default selection with stowage on SQLite,
a slice of it on PostgreSQL and MySQL. Each fails on any Nova test failure
that `known_failures.txt` does not list with its reason, and prints
`nova: P/T passed on DB` at the end of the session. STOWAGE_NOVA_FULL=1
runs the whole Placement-facing selection (684 tests) on each database
instead; STOWAGE_NOVA_REGEX narrows a run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import BACKENDS
from tests.nova.suite import KNOWN_FAILURES, SUMMARY_PROPERTY, RunOptions, run_suite
from tests.outcomes import report_unexpected


@pytest.mark.parametrize("database", BACKENDS)
def test_nova_functional_against_stowage_placement(database: str, tmp_path: Path,
                                                   request: pytest.FixtureRequest) -> None:
    outcome = run_suite(tmp_path, RunOptions.from_environ().on(database))
    request.node.user_properties.append((SUMMARY_PROPERTY,
                                         f"{outcome.summary()} on {database}"))
    assert outcome.total > 0, f"Nova's run selected no test; see {tmp_path}"
    report_unexpected(outcome, KNOWN_FAILURES)
