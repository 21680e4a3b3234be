"""The drain plan, the drain's outcome and the capacity report as operators read them.

Tables are plain text with aligned columns (no terminal library): they go to
logs and tickets as they are. `--format json` prints the API's own JSON instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from stowage.compute.drain.execute import Outcome

__all__ = ["plan_table", "outcome_table", "capacity_table", "table"]


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(c) for c in header]] + [["-" if c is None else str(c) for c in r]
                                          for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                     for r in cells)


def plan_table(plan: Mapping[str, Any], verbose: bool = False) -> str:
    rows = [(s["name"], s["id"], s["vm_state"], s["flavor"], s["action"], s["destination"],
             s["reason"]) for s in plan["servers"]]
    lines = [f"Drain plan for {plan['host']}:",
             table(("SERVER", "ID", "STATE", "FLAVOR", "MOVE", "DESTINATION", "REASON"), rows)]
    if verbose:
        for server in plan["servers"]:
            for r in server.get("rejections") or ():
                lines.append(f"  {server['name']}: {r['host']} rejected by {r['filter']}: "
                             f"{r['reason']}")
    totals = plan["totals"]
    lines.append("Totals: " + ", ".join(f"{k} {v}" for k, v in totals.items()))
    return "\n".join(lines)


def outcome_table(host: str, outcomes: Mapping[str, Outcome]) -> str:
    rows = [(o.name, o.id, o.action, o.result, o.destination, o.attempts, o.reason)
            for o in outcomes.values()]
    counts = {r: sum(1 for o in outcomes.values() if o.result == r)
              for r in ("moved", "failed", "skipped")}
    return "\n".join([f"Drain of {host}:",
                      table(("SERVER", "ID", "MOVE", "RESULT", "NOW ON", "TRIES", "REASON"),
                            rows),
                      "Totals: " + ", ".join(f"{k} {v}" for k, v in counts.items())])


def capacity_table(report: Mapping[str, Any]) -> str:
    lines = []
    for f in report["flavors"]:
        places = "; ".join(
            f"{what} " + ", ".join(f"{k}={v}" for k, v in sorted(f[key].items()))
            for what, key in (("zone", "per_zone"), ("aggregate", "per_aggregate"),
                              ("cell", "per_cell")) if f[key])
        lines.append((f["flavor"], f["flavorid"], f["total"], places or None))
    frag = report["fragmentation"]
    out = [table(("FLAVOR", "ID", "MORE FIT", "WHERE"), lines),
           "Free room on usable hosts: " + _amounts(frag["free"]),
           "Stranded (on hosts no flavor fits): " + _amounts(frag["stranded"])]
    for host, room in sorted(frag["hosts"].items()):
        out.append(f"  {host}: {_amounts(room)}")
    return "\n".join(out)


def _amounts(amounts: Mapping[str, int]) -> str:
    return ", ".join(f"{rc} {n}" for rc, n in sorted(amounts.items())) or "none"
