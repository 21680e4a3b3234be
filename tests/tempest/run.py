"""`python -m tests.tempest.run [REGEX]`: run Tempest against a fresh stowage by hand.

Prints each failure's first lines and the P/T line; the workspace (logs,
tempest.conf, stowage.log) stays in the directory it names.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from tests.outcomes import known_failures, unexpected
from tests.tempest.suite import DEFAULT_REGEX, KNOWN_FAILURES, RunOptions, run_suite


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("regex", nargs="?", default=DEFAULT_REGEX)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="stowage-tempest-"))
    workdir.mkdir(parents=True, exist_ok=True)
    outcome = run_suite(workdir, RunOptions(args.regex, args.concurrency))
    problems = unexpected(outcome, known_failures(KNOWN_FAILURES))
    for name in sorted(outcome.failed):
        mark = "" if name in problems else "  (known)"
        print(f"FAIL {name}{mark}")
        for line in outcome.details.get(name, "").splitlines()[-6:]:
            print(f"    {line}")
    print(f"workspace: {workdir}")
    print(outcome.summary())
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
