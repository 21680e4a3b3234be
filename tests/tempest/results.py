"""Run Tempest in its workspace and read back one status per test.

Tempest's own runner (stestr) keeps a subunit stream of the run; `subunit2csv`
from the side venv turns it into rows `test,status,start_time,stop_time`.
Class-level set-up failures arrive as a pseudo test named after the class,
`setUpClass (tempest.api...Class)`; it is named `tempest.api...Class.setUpClass`
here, so a known-failures entry can name it like any test.
"""

from __future__ import annotations

import csv
import io
import re
import subprocess
from pathlib import Path

from tests.outcomes import Outcome

__all__ = ["run_tempest"]

_TAGS = re.compile(r"\[.*\]$")
_CLASS_FIXTURE = re.compile(r"^(setUpClass|tearDownClass) \((.*)\)$")


def test_name(raw: str) -> str:
    """`tempest.api.x.Class.test_y[id-...,smoke]` → `tempest.api.x.Class.test_y`."""
    name = _TAGS.sub("", raw.strip())
    fixture = _CLASS_FIXTURE.match(name)
    return f"{fixture.group(2)}.{fixture.group(1)}" if fixture else name


def _rows(space: Path, venv: Path) -> list[dict[str, str]]:
    stream = subprocess.run([str(venv / "bin" / "stestr"), "last", "--subunit"], cwd=space,
                            capture_output=True, check=False).stdout
    table = subprocess.run([str(venv / "bin" / "subunit2csv")], input=stream,
                           capture_output=True, check=False).stdout.decode(errors="replace")
    return list(csv.DictReader(io.StringIO(table)))


def _failure_details(space: Path, venv: Path) -> dict[str, str]:
    """The traceback of each failed test, from `stestr last`'s text output."""
    text = subprocess.run([str(venv / "bin" / "stestr"), "failing"], cwd=space,
                          capture_output=True, check=False).stdout.decode(errors="replace")
    details: dict[str, str] = {}
    for block in text.split("=" * 70):
        head, _, rest = block.strip().partition("\n")
        if head.startswith(("FAIL:", "ERROR:")):
            details[test_name(head.split(":", 1)[1])] = rest.strip()[-3000:]
    return details


def run_tempest(space: Path, venv: Path, regex: str, concurrency: int,
                timeout: float) -> Outcome:
    argv = [str(venv / "bin" / "tempest"), "run", "--regex", regex,
            "--concurrency", str(concurrency)]
    with open(space / "logs" / "run.log", "wb") as log:
        subprocess.run(argv, cwd=space, stdout=log, stderr=subprocess.STDOUT,
                       timeout=timeout, check=False)
    outcome = Outcome("tempest")
    for row in _rows(space, venv):
        name, status = test_name(row["test"]), row["status"]
        bucket = {"success": outcome.passed, "skip": outcome.skipped}.get(status,
                                                                         outcome.failed)
        bucket.append(name)
    outcome.details = _failure_details(space, venv)
    return outcome
