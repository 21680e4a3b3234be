"""`python3 -m tests.nova.run [--full] [--regex R]`: Nova's functional tests on stowage, by hand.

Prints progress while it runs, each failure's last lines, and the P/T line;
the work directory (each part's stowage.log, nova.log, results.jsonl)
stays where it says.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from tests.nova import selection
from tests.nova.suite import KNOWN_FAILURES, RunOptions, run_suite
from tests.outcomes import known_failures, unexpected


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--full", action="store_true",
                        help="the whole Placement-facing selection (~700 tests)")
    parser.add_argument("--regex", default="", help="only test ids matching this")
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--database", default="sqlite", choices=("sqlite", "postgresql", "mysql"))
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="stowage-nova-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"workdir: {workdir}", flush=True)
    names = selection.FULL if args.full else selection.DEFAULT
    options = RunOptions(names=names, regex=args.regex, processes=args.processes,
                         database=args.database)
    outcome = run_suite(workdir, options, progress=True)
    problems = unexpected(outcome, known_failures(KNOWN_FAILURES))
    for name in sorted(outcome.failed):
        print(f"FAIL {name}{'' if name in problems else '  (known)'}")
        for line in outcome.details.get(name, "").splitlines()[-6:]:
            print(f"    {line}")
    print(outcome.summary())
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
