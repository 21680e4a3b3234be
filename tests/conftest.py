"""Shared test configuration: every database-backed test runs on each backend.

`STOWAGE_TEST_BACKENDS` (default "sqlite,postgresql,mysql") selects backends;
each run creates throw-away databases on the local servers and drops them.
The conformance, Tempest and Nova summaries are plugins registered here: under
pytest-xdist only this top-level conftest is loaded where the summary prints.
"""

from __future__ import annotations

import compileall
import os
from collections import Counter
from pathlib import Path

import pytest

from tests.conformance.summary import ConformanceSummary
from tests.nova.suite import SUMMARY_PROPERTY as NOVA_SUMMARY
from tests.outcomes import SideSuiteSummary
from tests.tempest.suite import SUMMARY_PROPERTY as TEMPEST_SUMMARY

BACKENDS = [b for b in os.environ.get("STOWAGE_TEST_BACKENDS",
                                      "sqlite,postgresql,mysql").split(",") if b]


# Files whose one test runs a whole upstream suite for minutes. They go first,
# so that pytest-xdist runs them beside the rest instead of after it.
LONG_FIRST = ("tests/nova/", "tests/tempest/")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The long side suites first, then files by test count, as xdist would order them.

    xdist's own reordering (off through `--no-loadscope-reorder` in pyproject)
    sorts by test count only, which puts these one-test files last. Sorting is
    stable, so a file's tests keep their order.
    """
    counts = Counter(item.nodeid.split("::")[0] for item in items)

    def rank(item: pytest.Item) -> tuple[bool, int]:
        path = item.nodeid.split("::")[0]
        return (not path.startswith(LONG_FIRST), -counts[path])

    items.sort(key=rank)


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # once, in the controller
        _compile_sources()
    config.pluginmanager.register(ConformanceSummary(), "stowage-conformance-summary")
    config.pluginmanager.register(SideSuiteSummary(TEMPEST_SUMMARY, "tempest"),
                                  "stowage-tempest-summary")
    config.pluginmanager.register(SideSuiteSummary(NOVA_SUMMARY, "nova"),
                                  "stowage-nova-summary")


def _compile_sources() -> None:
    """Byte-compile stowage once, so that the hundreds of `stowage serve` processes the
    tests start do not each compile it again: with PYTHONDONTWRITEBYTECODE set (as on
    CI machines) nothing would ever cache it, at ~0.3 s of CPU per process start."""
    compileall.compile_dir(Path(__file__).resolve().parents[1] / "src" / "stowage",
                           quiet=1)
