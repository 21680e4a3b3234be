"""The HTML of the drain plan page and of the capacity section.

Rendered on the server from the same dicts the JSON routes answer
(`/dashboard/api/drain-plan/<host>`, `/dashboard/api/capacity`), which are
the Compute routes' own JSON. Every value is escaped. Words as docs/drain.md
uses them: move (live, cold, skip, busy, unplaceable), destination, reason,
free room, stranded.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any
from urllib.parse import quote

__all__ = ["drain_href", "drain_body", "capacity", "plan_form"]

# Hosts named under the fragmentation figures; the JSON route has them all.
_MAX_STRANDED_HOSTS = 20


def _e(value: object) -> str:
    return escape("" if value is None else str(value))


def drain_href(host: str) -> str:
    return "/dashboard/drain/" + quote(host, safe="")


def _amounts(amounts: Mapping[str, int]) -> str:
    return ", ".join(f"{_e(rc)} {_e(n)}" for rc, n in sorted(amounts.items())) or "none"


def _rejections(server: Mapping[str, Any]) -> str:
    found = server.get("rejections") or []
    if not found:
        return ""
    items = "".join(f'<li><b>{_e(r["host"])}</b> rejected by {_e(r["filter"])}: '
                    f'{_e(r["reason"])}</li>' for r in found)
    return f'<details class="rejections"><summary>{len(found)} host(s) rejected' \
           f'</summary><ul>{items}</ul></details>'


def _planned(server: Mapping[str, Any]) -> str:
    return (f'<tr class="planned action-{_e(server["action"])}" data-server="{_e(server["id"])}">'
            f'<td><a href="/?servers_q={_e(server["id"])}">{_e(server["name"])}</a>'
            f'<div class="uuid">{_e(server["id"])}</div></td>'
            f'<td>{_e(server["vm_state"])}<div class="task">{_e(server["task_state"] or "")}'
            f'</div></td><td>{_e(server["flavor"])}</td>'
            f'<td class="action"><span class="badge move-{_e(server["action"])}">'
            f'{_e(server["action"])}</span></td>'
            f'<td class="destination">{_e(server["destination"] or "-")}</td>'
            f'<td class="reason">{_e(server["reason"] or "")}{_rejections(server)}</td></tr>')


def drain_body(plan: Mapping[str, Any], verbose: bool) -> str:
    """The plan of one host: a row per server, then the totals."""
    host = plan["host"]
    rows = "".join(_planned(s) for s in plan["servers"])
    head = ("<tr><th>server</th><th>state</th><th>flavor</th><th>move</th>"
            "<th>planned destination</th><th>reason</th></tr>")
    table = (f'<table class="drain-plan"><thead>{head}</thead><tbody>{rows}</tbody></table>'
             if rows else '<p class="quiet" id="no-servers">No server on this host: '
             'nothing to move.</p>')
    totals = " ".join(f'<span data-total="{_e(k)}">{_e(k)} <b>{_e(v)}</b></span>'
                       for k, v in plan["totals"].items())
    other = (f'<a href="{drain_href(host)}">without</a>' if verbose else
             f'<a href="{drain_href(host)}?verbose=1">with</a>')
    return (f'<section id="drain-plan" data-host="{_e(host)}"><h2>Drain plan for '
            f'{_e(host)} <span class="quiet">dry run: nothing is claimed or changed</span>'
            f'</h2><p class="quiet">Each server\'s destination is the one the scheduler '
            f'would choose now, each planned claim counted for the next '
            f'(<code>stowage manage host drain {_e(host)} --dry-run</code>). Show it '
            f'{other} every host\'s rejection.</p>{table}'
            f'<p class="totals" id="drain-totals">Totals: {totals}</p></section>')


def plan_form() -> str:
    """The "Plan drain" section of the page: any host by name (each host card links too)."""
    return ('<form class="filter" method="get" action="/dashboard/drain" id="plan-drain-form">'
            '<input name="host" placeholder="host name" required>'
            '<button>plan drain</button></form><p class="quiet">A dry run: for each server '
            'of the host, the destination the scheduler would choose now, the move type, or '
            'why it cannot move. Each host below links its own plan.</p>')


def _places(flavor: Mapping[str, Any]) -> str:
    parts = []
    for what, key in (("zone", "per_zone"), ("aggregate", "per_aggregate"),
                      ("cell", "per_cell")):
        if flavor[key]:
            values = ", ".join(f"{_e(k)} {_e(v)}" for k, v in sorted(flavor[key].items()))
            parts.append(f'<div class="per-{what}">{what}: {values}</div>')
    return "".join(parts) or "-"


def capacity(data: Mapping[str, Any]) -> str:
    """How many more of each flavor fit, where, and the free room no flavor can use."""
    if not data.get("available"):
        return f'<p class="quiet">{_e(data.get("why"))}</p>'
    if data.get("running"):
        return '<p class="quiet" id="capacity-running">Capacity is being counted&hellip;</p>'
    rows = "".join(f'<tr class="flavor" data-flavor="{_e(f["flavorid"])}"><td>{_e(f["flavor"])}'
                   f'<div class="uuid">{_e(f["flavorid"])}</div></td>'
                   f'<td class="more">{_e(f["total"])}</td><td>{_places(f)}</td></tr>'
                   for f in data["flavors"])
    head = "<tr><th>flavor</th><th>more fit</th><th>where</th></tr>"
    frag = data["fragmentation"]
    hosts = sorted(frag["hosts"].items())
    listed = "".join(f'<li data-host="{_e(h)}"><b>{_e(h)}</b>: {_amounts(room)}</li>'
                     for h, room in hosts[:_MAX_STRANDED_HOSTS])
    more = (f"<li>and {len(hosts) - _MAX_STRANDED_HOSTS} more "
            f'(<a href="/dashboard/api/capacity">all</a>)</li>'
            if len(hosts) > _MAX_STRANDED_HOSTS else "")
    return (f'<p class="quiet">Each flavor counted alone, as if only it came; counted '
            f'{_e(data["checked_at"])} in {_e(data["seconds"])} s '
            f'(<code>stowage manage capacity</code>).</p>'
            f'<table class="capacity"><thead>{head}</thead><tbody>{rows}</tbody></table>'
            f'<p id="free-room">Free room on usable hosts: {_amounts(frag["free"])}</p>'
            f'<p id="stranded">Stranded (on hosts where no flavor fits): '
            f'{_amounts(frag["stranded"])}</p><ul class="stranded">{listed}{more}</ul>')
