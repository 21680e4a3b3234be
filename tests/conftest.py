"""Shared test configuration: every database-backed test runs on each backend.

`STOWAGE_TEST_BACKENDS` (default "sqlite,postgresql,mysql") selects backends;
each run creates throw-away databases on the local servers and drops them.
The conformance and Tempest summaries are plugins registered here: under
pytest-xdist only this top-level conftest is loaded where the summary prints.
"""

from __future__ import annotations

import os

import pytest

from tests.conformance.summary import ConformanceSummary
from tests.tempest.summary import TempestSummary

BACKENDS = [b for b in os.environ.get("STOWAGE_TEST_BACKENDS",
                                      "sqlite,postgresql,mysql").split(",") if b]


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(ConformanceSummary(), "stowage-conformance-summary")
    config.pluginmanager.register(TempestSummary(), "stowage-tempest-summary")
