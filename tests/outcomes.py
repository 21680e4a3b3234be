"""What a side suite (Tempest, Nova's functional tests) reports back to pytest.

Both run an upstream test suite in a side venv against a live stowage; both
end as one pytest test that prints a `P/T passed` line and fails on any
failure that the suite's known-failures list does not excuse with a reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

__all__ = ["Outcome", "SideSuiteSummary", "known_failures", "report_unexpected", "unexpected"]


@dataclass
class Outcome:
    label: str
    passed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    details: dict[str, str] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return len(self.passed) + len(self.failed) + len(self.skipped)

    def summary(self) -> str:
        return (f"{self.label}: {len(self.passed)}/{self.total} passed "
                f"({len(self.failed)} failed, {len(self.skipped)} skipped)")


def known_failures(path: Path) -> dict[str, str]:
    """{test id: reason} from a list; blank and `#` lines are ignored."""
    known: dict[str, str] = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line, _, reason = raw.partition(" #")
        if line.strip() and not line.lstrip().startswith("#"):
            known[line.strip()] = reason.strip()
    return known


def unexpected(outcome: Outcome, known: dict[str, str]) -> list[str]:
    """Failures the list does not excuse."""
    return [name for name in outcome.failed if name not in known]


def report_unexpected(outcome: Outcome, known_list: Path) -> None:
    """Fail the pytest test with each unexcused failure and its traceback's tail."""
    problems = unexpected(outcome, known_failures(known_list))
    if problems:
        lines = [f"{len(problems)} {outcome.label} failure(s) not in {known_list.name}:"]
        for name in sorted(problems):
            lines.append(f"- {name}")
            lines += [f"    {line}" for line in outcome.details.get(name, "").splitlines()[-8:]]
        pytest.fail("\n".join(lines), pytrace=False)


class SideSuiteSummary:
    """Prints, in a section of its own at the end of the session, the lines
    tests attached as `user_properties` under `key` (registered by
    `tests/conftest.py`, whose hooks also run where pytest-xdist prints)."""

    def __init__(self, key: str, section: str) -> None:
        self.key, self.section = key, section
        self.lines: list[str] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call":
            self.lines.extend(str(v) for k, v in report.user_properties if k == self.key)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.lines:
            terminalreporter.section(self.section)
            for line in self.lines:
                terminalreporter.write_line(line)
