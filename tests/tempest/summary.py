"""Tempest's `P/T passed` line at the end of a pytest session (registered by `tests/conftest.py`,
whose hooks also run in the process that prints under pytest-xdist)."""

from __future__ import annotations

import pytest

__all__ = ["TempestSummary", "SUMMARY_PROPERTY"]

SUMMARY_PROPERTY = "tempest_summary"


class TempestSummary:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call":
            self.lines.extend(str(v) for k, v in report.user_properties
                              if k == SUMMARY_PROPERTY)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.lines:
            terminalreporter.section("tempest")
            for line in self.lines:
                terminalreporter.write_line(line)
