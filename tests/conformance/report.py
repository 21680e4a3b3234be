"""The per-file ``P/T passed`` table, shared by pytest's summary and ``run``."""

from __future__ import annotations

from collections.abc import Iterable

from .suite import FileResult

__all__ = ["format_table"]


def format_table(results: Iterable[FileResult], detail: str) -> str:
    """Rows ``file  P/T passed``, then ``conformance: P/T passed (detail)``."""
    rows = sorted(results, key=lambda r: r.file)
    width = max((len(r.file) for r in rows), default=10)
    lines = []
    for r in rows:
        mark = "" if r.passed + r.skipped == r.total else "  <--"
        skipped = f" ({r.skipped} skipped)" if r.skipped else ""
        lines.append(f"{r.file:<{width}}  {r.passed:>4}/{r.total:<4}"
                     f" passed{skipped}{mark}")
    passed = sum(r.passed for r in rows)
    total = sum(r.total for r in rows)
    lines.append(f"conformance: {passed}/{total} passed"
                 f" ({detail}, {len(rows)} files)")
    return "\n".join(lines)
