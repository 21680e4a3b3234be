"""The conformance table at the end of a pytest session (a plugin `tests/conftest.py` registers).

Results arrive through each test report's ``user_properties`` (set by
``test_gabbits``). The plugin lives in the top-level conftest, not in this
package's: under pytest-xdist only the workers collect, so only a top-level
conftest's hooks run in the process that prints.
"""

from __future__ import annotations

import json

import pytest

from .report import format_table
from .settings import RunSettings
from .suite import FileResult, TestProblem

__all__ = ["ConformanceSummary", "RESULT_PROPERTY"]

RESULT_PROPERTY = "conformance_result"


def _decode(raw: str) -> tuple[str, FileResult]:
    data = json.loads(raw)
    database = data.pop("database")
    data["problems"] = [TestProblem(**p) for p in data["problems"]]
    return database, FileResult(**data)


class ConformanceSummary:
    def __init__(self) -> None:
        self.results: dict[str, list[FileResult]] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        for name, value in report.user_properties:
            if name == RESULT_PROPERTY:
                database, result = _decode(str(value))
                self.results.setdefault(database, []).append(result)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.results:
            return
        target = RunSettings.from_environ().target
        terminalreporter.section("conformance")
        for database, results in sorted(self.results.items()):
            terminalreporter.write_line(format_table(results, f"{target}, {database}"))
