"""The known-failures list: gabbi tests allowed to fail, each with a reason.

``known_failures.txt`` holds one entry per line::

    file.yaml test name as written in the YAML  # why it may fail

Blank lines and lines starting with ``#`` are ignored. The list is meant to
stay empty, or to hold only tests that provably test upstream internals.
"""

from __future__ import annotations

from pathlib import Path

from .suite import FileResult, TestProblem

__all__ = ["KNOWN_FAILURES_PATH", "load_known_failures", "unexpected",
           "format_problems"]

KNOWN_FAILURES_PATH = Path(__file__).with_name("known_failures.txt")


def load_known_failures(path: Path = KNOWN_FAILURES_PATH) -> set[tuple[str, str]]:
    """Return {(file, test name)} from the list."""
    known: set[tuple[str, str]] = set()
    if not path.exists():
        return known
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        file, _, name = line.partition(" ")
        known.add((file, name.strip()))
    return known


def unexpected(result: FileResult,
               known: set[tuple[str, str]]) -> list[TestProblem]:
    """The problems in ``result`` that the list does not excuse."""
    return [p for p in result.problems if (result.file, p.name) not in known]


def format_problems(file: str, problems: list[TestProblem],
                    lines: int = 6) -> str:
    """Each failing test's name and the first lines of its message."""
    out = [f"{len(problems)} unexpected failure(s) in {file}:"]
    for problem in problems:
        out.append(f"- {problem.name} [{problem.kind}]")
        msg = problem.message.splitlines()[:lines]
        out.extend(f"    {line}" for line in msg)
    return "\n".join(out)
