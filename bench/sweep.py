"""The outer loop shared by the side-by-side benchmarks: backend x topology x size x target.

Why one place: every benchmark that compares stowage with upstream must start
each target on a fresh database, stop servers and drop databases on Ctrl-C or
SIGTERM, delete its SQLite files, print one table per combination and write
the same `--json` shape; only what is measured per target differs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import upstream_venv

__all__ = ["Results", "run"]

Results = dict[tuple[str, str, int], dict[str, Any]]
# (target, backend, topology, size, args, workdir, upstream venv) -> that target's figures
RunTarget = Callable[[str, str, str, int, argparse.Namespace, Path, Path | None],
                     dict[str, Any]]
# (title, {target: figures}, topology) -> the printed table
Describe = Callable[[str, dict[str, Any], str], str]


def _on_sigterm(_sig: int, _frame: Any) -> None:
    raise KeyboardInterrupt


def run(args: argparse.Namespace, name: str, note: str, run_target: RunTarget,
        describe: Describe) -> Results | None:
    """Measure every combination, print its table, then all tables; None if interrupted."""
    signal.signal(signal.SIGTERM, _on_sigterm)
    targets = [t for t in args.targets.split(",") if t]
    venv = upstream_venv.ensure() if "upstream" in targets else None
    workdir = Path(tempfile.mkdtemp(prefix=f"stowage-{name}-"))
    print(f"{name}: logs and SQLite files under {workdir}; workers={args.workers}; {note}"
          "absolute numbers on a shared 2-core machine are noisy", flush=True)
    results: Results = {}
    tables: list[str] = []
    try:
        for backend in args.backend.split(","):
            for topo in args.topologies.split(","):
                for size in (int(s) for s in args.sizes.split(",")):
                    res = results.setdefault((backend, topo, size), {})
                    for target in targets:
                        res[target] = run_target(target, backend, topo, size, args,
                                                 workdir, venv)
                    title = f"{backend} / {topo} / N={size} / workers={args.workers}"
                    tables.append(describe(title, res, topo))
                    print("\n" + tables[-1] + "\n", flush=True)
    except KeyboardInterrupt:
        print(f"{name}: interrupted; servers stopped, databases dropped", file=sys.stderr)
        return None
    finally:
        for db in workdir.rglob("*.db*"):
            with contextlib.suppress(OSError):
                db.unlink()
        if args.json:
            Path(args.json).write_text(json.dumps(
                [{"backend": b, "topology": t, "size": n, "workers": args.workers,
                  "results": r} for (b, t, n), r in results.items()], indent=2))
    print("\n==== all tables ====\n" + "\n\n".join(tables))
    return results
