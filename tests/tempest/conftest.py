"""Print Tempest's `P/T passed` line at the end of the pytest session."""

from __future__ import annotations

import pytest

_summaries: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call":
        _summaries.extend(str(v) for k, v in report.user_properties if k == "tempest_summary")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _summaries:
        terminalreporter.section("tempest")
        for line in _summaries:
            terminalreporter.write_line(line)
