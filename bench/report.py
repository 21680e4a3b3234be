"""Tables and target checks printed from the raw numbers.

Why separate: the measuring code produces one plain dict per target; this
module only formats it, so `--json` output and the printed tables come from
the same numbers.
"""

from __future__ import annotations

from typing import Any

__all__ = ["summary", "table"]

TARGETS = ("stowage", "upstream")
LIMITS = (("none", "no limit"), ("1", "limit=1"), ("50", "limit=50"))


def _num(v: float | None, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def _ratio(a: float | None, b: float | None) -> str:
    if not a or not b:
        return "-"
    return f"{a / b:.1f}x"


def _get(res: dict[str, Any], target: str, *path: str) -> Any:
    cur: Any = res.get(target)
    for key in path:
        if not isinstance(cur, dict) or key not in cur:
            return None
        cur = cur[key]
    return cur


def _rows(res: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    s, u = "stowage", "upstream"
    rows = []
    bs, bu = _get(res, s, "build_s"), _get(res, u, "build_s")
    rows.append(("build topology (s)", _num(bs, ".1f"), _num(bu, ".1f"), _ratio(bu, bs)))
    rs, ru = _get(res, s, "build_retries"), _get(res, u, "build_retries")
    rows.append(("  build requests retried (5xx)", _num(rs, "d"), _num(ru, "d"), ""))
    for phase in ("fresh", "claimed"):
        cs, cu = _get(res, s, "count", phase), _get(res, u, "count", phase)
        same = "-" if cs is None or cu is None else ("same" if cs == cu else "MISMATCH")
        rows.append((f"candidates ({phase})", _num(cs, "d"), _num(cu, "d"), same))
        for key, label in LIMITS:
            for stat in ("median_ms", "p95_ms"):
                ls = _get(res, s, "latency", phase, key, stat)
                lu = _get(res, u, "latency", phase, key, stat)
                rows.append((f"  {phase} {label} {stat[:-3]} (ms)", _num(ls, ".1f"),
                             _num(lu, ".1f"), _ratio(lu, ls)))
    for key, label in (("50", "limit=50"), ("none", "no limit")):
        ts = _get(res, s, "throughput", key, "rps")
        tu = _get(res, u, "throughput", key, "rps")
        rows.append((f"throughput {label} (req/s)", _num(ts, ".1f"), _num(tu, ".1f"),
                     _ratio(ts, tu)))
    return rows


def table(title: str, res: dict[str, Any]) -> str:
    """One table: rows per measurement; ratio = upstream/stowage for times,
    stowage/upstream for throughput (so >1 always favours stowage)."""
    lines = [f"== {title} ==",
             f"{'measurement':<34}{'stowage':>11}{'upstream':>11}{'ratio':>10}"]
    lines += [f"{a:<34}{b:>11}{c:>11}{d:>10}" for a, b, c, d in _rows(res)]
    return "\n".join(lines)


def _check(label: str, value: float | None, ok: bool) -> str:
    if value is None:
        return f"  {label}: not measured"
    return f"  {label}: {value:.1f}x  {'PASS' if ok else 'FAIL'}"


def summary(results: dict[tuple[str, str, int], dict[str, Any]]) -> str:
    """The three target checks, each for the no-limit and limit=50 queries."""
    out = ["== targets =="]
    out.append("median >=10x lower than upstream at N=1000 (upstream/stowage):")
    for (backend, topo, size), res in sorted(results.items()):
        if size != 1000:
            continue
        for phase in ("fresh", "claimed"):
            for key, label in (("none", "no limit"), ("50", "limit=50")):
                s = _get(res, "stowage", "latency", phase, key, "median_ms")
                u = _get(res, "upstream", "latency", phase, key, "median_ms")
                r = u / s if s and u else None
                out.append(_check(f"{backend} {topo} {phase} {label}", r,
                                  r is not None and r >= 10))
    out.append("throughput >=5x upstream (stowage/upstream, 10 clients):")
    for (backend, topo, size), res in sorted(results.items()):
        for key, label in (("none", "no limit"), ("50", "limit=50")):
            s = _get(res, "stowage", "throughput", key, "rps")
            u = _get(res, "upstream", "throughput", key, "rps")
            r = s / u if s and u else None
            out.append(_check(f"{backend} {topo} N={size} {label}", r,
                              r is not None and r >= 5))
    out.append("stowage flat N=10,000 median <=3x its N=1000 median:")
    for backend in sorted({k[0] for k in results}):
        small = results.get((backend, "flat", 1000))
        big = results.get((backend, "flat", 10000))
        for phase in ("fresh", "claimed"):
            for key, label in (("none", "no limit"), ("50", "limit=50")):
                a = _get(small or {}, "stowage", "latency", phase, key, "median_ms")
                b = _get(big or {}, "stowage", "latency", phase, key, "median_ms")
                r = b / a if a and b else None
                out.append(_check(f"{backend} flat {phase} {label}", r,
                                  r is not None and r <= 3))
    return "\n".join(out)
