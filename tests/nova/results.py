"""Nova's test results, from the JSON lines each test process appended.

A test that never reported (its process crashed, hung past the timeout or
was killed) counts as failed, with the tail of that process's log as its
details: a silent gap must not pass as a smaller run.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.outcomes import Outcome

__all__ = ["read_outcome"]


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"(no {path.name})"


def read_outcome(ids: list[str], parts: list[Path]) -> Outcome:
    outcome = Outcome("nova")
    reported: set[str] = set()
    for part in parts:
        results = part / "results.jsonl"
        lines = results.read_text().splitlines() if results.exists() else []
        for line in lines:
            row = json.loads(line)
            reported.add(row["id"])
            {"success": outcome.passed, "skip": outcome.skipped}.get(
                row["status"], outcome.failed).append(row["id"])
            if row["status"] == "fail":
                outcome.details[row["id"]] = row["details"][-4000:]
        for missing in _unreported(part, reported):
            outcome.failed.append(missing)
            outcome.details[missing] = ("did not report (crashed, hung or killed); "
                                        f"{part / 'nova.log'} ends:\n{_tail(part / 'nova.log')}")
    return outcome


def _unreported(part: Path, reported: set[str]) -> list[str]:
    listed = part / "tests.txt"
    if not listed.exists():
        return []
    return [t for t in listed.read_text().splitlines() if t and t not in reported]
