"""Run the conformance suite without pytest and print the per-file table.

    python -m tests.conformance.run [--target upstream|stowage] [-j N]
                                    [-v] [files...]

Files are YAML names or stems (``inventory.yaml`` or ``inventory``); none
means all 79. ``-v`` also prints each failing test and its message. Each
worker is a separate process because fixtures export ``$ENVIRON`` values
through ``os.environ``, which threads would share.
"""

from __future__ import annotations

import argparse
import signal
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from .known import format_problems, load_known_failures, unexpected
from .report import format_table
from .settings import TARGETS, RunSettings
from .sidevenv import gabbits_dir
from .suite import FileResult, run_file


def select_files(names: list[str]) -> list[Path]:
    root = gabbits_dir()
    if not names:
        return sorted(root.glob("*.yaml"))
    paths = [root / (n if n.endswith(".yaml") else f"{n}.yaml") for n in names]
    missing = [p.name for p in paths if not p.exists()]
    if missing:
        raise SystemExit(f"no such gabbi file(s): {', '.join(missing)}")
    return paths


def _run_one(args: tuple[Path, RunSettings]) -> FileResult:
    return run_file(*args)


def _exit_on_sigterm(signum: int, frame: object) -> None:
    """Turn SIGTERM (e.g. from ``timeout``) into SystemExit so fixtures stop
    their servers and drop their databases on the way out."""
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    parser = argparse.ArgumentParser(prog="python -m tests.conformance.run")
    parser.add_argument("--target", choices=TARGETS)
    parser.add_argument("-j", "--jobs", type=int, default=1)
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("files", nargs="*")
    opts = parser.parse_args(argv)

    settings = RunSettings.from_environ(opts.target)
    paths = select_files(opts.files)
    work = [(p, settings) for p in paths]
    if opts.jobs > 1:
        pool = ProcessPoolExecutor(opts.jobs)
        try:
            results = list(pool.map(_run_one, work))
        finally:
            # On interruption, let running files clean up; start no more.
            pool.shutdown(wait=True, cancel_futures=True)
    else:
        results = [_run_one(w) for w in work]

    known = load_known_failures()
    bad = 0
    for result in results:
        problems = unexpected(result, known)
        bad += len(problems)
        if opts.verbose and problems:
            print(format_problems(result.file, problems), end="\n\n")
    detail = f"{settings.target}, {settings.database}"
    print(format_table(results, detail))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
