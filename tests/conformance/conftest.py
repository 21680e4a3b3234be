"""Print the conformance table at the end of a pytest session.

Results arrive through each test report's ``user_properties`` (set by
``test_gabbits``), which pytest-xdist forwards from workers too.
"""

from __future__ import annotations

import json

import pytest

from .report import format_table
from .settings import RunSettings
from .suite import FileResult, TestProblem

_results: dict[str, list[FileResult]] = {}


def _decode(raw: str) -> tuple[str, FileResult]:
    data = json.loads(raw)
    database = data.pop("database")
    data["problems"] = [TestProblem(**p) for p in data["problems"]]
    return database, FileResult(**data)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when != "call":
        return
    for name, value in report.user_properties:
        if name == "conformance_result":
            database, result = _decode(str(value))
            _results.setdefault(database, []).append(result)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _results:
        return
    target = RunSettings.from_environ().target
    terminalreporter.section("conformance")
    for database, results in sorted(_results.items()):
        terminalreporter.write_line(format_table(results, f"{target}, {database}"))
