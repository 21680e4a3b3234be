"""The dashboard's HTML: the page, and each section on its own for the live refresh.

Everything is rendered here, on the server, from the same dicts the JSON
routes answer; the page's script only fetches a section again
(`/dashboard/part/<section>`) and swaps it in. Every value from the
database is escaped. The markup names things the way docs/moves.md does:
provider, capacity, usage, consumer, migration, source, destination.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any
from urllib.parse import urlencode

from stowage.web.dashboard.hosts import STATES
from stowage.web.dashboard.render_plans import capacity, drain_body, drain_href, plan_form

__all__ = ["page", "section", "SECTIONS", "login_page", "message_page", "drain_page",
           "capacity"]

SECTIONS = ("audit", "moves", "hosts", "servers", "capacity")


def _e(value: object) -> str:
    return escape("" if value is None else str(value))


def _bytes(value: int | None) -> str:
    if value is None:
        return "-"
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return str(value)


def _holds(rows: Sequence[Mapping[str, Any]], who: str) -> str:
    if not rows:
        return f'<div class="holds none">{_e(who)} holds nothing</div>'
    parts = []
    for row in rows:
        res = ", ".join(f"{_e(rc)} {_e(n)}" for rc, n in row["resources"].items())
        parts.append(f'<div class="holds" data-consumer="{_e(who)}" '
                     f'data-provider="{_e(row["name"])}"><b>{_e(who)}</b> on '
                     f'<span class="provider">{_e(row["name"])}</span>: {res}</div>')
    return "".join(parts)


def _progress(progress: Mapping[str, Any]) -> str:
    if not progress.get("memory_total") and not progress.get("disk_total"):
        return "-"
    return (f'memory {_bytes(progress.get("memory_processed"))} of '
            f'{_bytes(progress.get("memory_total"))}, disk '
            f'{_bytes(progress.get("disk_processed"))} of {_bytes(progress.get("disk_total"))}')


def _fault(fault: Mapping[str, Any] | None) -> str:
    if not fault:
        return ""
    return f'<span class="fault" title="{_e(fault["created"])}">{_e(fault["code"])} ' \
           f'{_e(fault["message"])}</span>'


def moves(data: Mapping[str, Any]) -> str:
    found = data["moves"]
    if not found:
        return '<p class="quiet" id="no-moves">No move in progress.</p>'
    rows = []
    for move in found:
        server = move.get("server") or {}
        step = move.get("step") or {}
        step_text = (f'{_e(step.get("operation"))}: {_e(step.get("step"))} '
                     f'({_e(step.get("state"))}{", ended" if step.get("ended") else ""})'
                     if step else "-")
        rows.append(
            f'<tr class="move" data-migration="{_e(move["uuid"])}">'
            f'<td><a href="?servers_q={_e(server.get("uuid", ""))}">{_e(server.get("name"))}</a>'
            f'<div class="uuid">{_e(server.get("uuid"))}</div></td>'
            f'<td>{_e(move["type"])}<div class="status">{_e(move["status"])}</div></td>'
            f'<td class="server-status">{_e(server.get("status"))}'
            f'<div class="task">{_e(server.get("task_state") or "")}</div></td>'
            f'<td>{_e(move["source"])} &rarr; {_e(move["dest"])}</td>'
            f'<td class="source-side">{_holds(move.get("migration_holds", []), "migration")}</td>'
            f'<td class="dest-side">{_holds(move.get("instance_holds", []), "instance")}</td>'
            f'<td class="step">{step_text}</td><td>{_e(move["elapsed"])} s</td>'
            f'<td>{_progress(move["progress"])}</td><td>{_fault(server.get("fault"))}</td></tr>')
    head = ("<tr><th>server</th><th>move</th><th>status</th><th>source &rarr; destination"
            "</th><th>migration's allocation (source)</th><th>instance's allocation "
            "(destination)</th><th>conductor step</th><th>elapsed</th><th>copied</th>"
            "<th>last fault</th></tr>")
    return f'<table class="moves"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")


def _linked(sentence: str) -> str:
    """A violation with each uuid in it a link to the servers it finds (a server's
    own uuid, or nothing for a migration's or a provider's)."""
    out, last = [], 0
    for match in _UUID.finditer(sentence):
        out.append(_e(sentence[last:match.start()]))
        out.append(f'<a href="?servers_q={match.group()}">{match.group()}</a>')
        last = match.end()
    out.append(_e(sentence[last:]))
    return "".join(out)


def audit(data: Mapping[str, Any]) -> str:
    if not data.get("available"):
        return f'<p class="quiet">{_e(data.get("why"))}</p>'
    if data.get("running"):
        return '<p class="quiet" id="audit-running">The audit is running&hellip;</p>'
    when = f'<span class="quiet">checked {_e(data["checked_at"])} in {_e(data["seconds"])} s' \
           '</span>'
    if data["ok"]:
        return f'<p class="audit-ok" id="audit-ok">&#10003; Accounting audit: every ' \
               f'allocation is owned and within capacity. {when}</p>'
    items = "".join(f"<li>{_linked(v)}</li>" for v in data["violations"])
    return f'<div class="audit-bad" id="audit-bad"><p>&#10007; {len(data["violations"])} ' \
           f'violation(s) (<code>stowage manage placement audit</code>) {when}</p>' \
           f'<ul>{items}</ul></div>'


def _bar(res: Mapping[str, Any]) -> str:
    """Usage against capacity as a <meter>: colour from its low/high marks, no inline style
    (the page's Content-Security-Policy allows none)."""
    capacity, used = res["capacity"], res["used"]
    top = max(capacity, used, 1)
    return (f'<div class="res" data-class="{_e(res["class"])}">'
            f'<span class="rc">{_e(res["class"])}</span>'
            f'<meter min="0" max="{top}" low="{0.6 * top:.1f}" high="{0.9 * top:.1f}" '
            f'optimum="0" value="{_e(used)}" title="{_e(used)} of {_e(capacity)}"></meter>'
            f'<span class="num">{_e(used)} / {_e(capacity)}</span>'
            f'<span class="inv">total {_e(res["total"])}, reserved {_e(res["reserved"])}, '
            f'ratio {_e(res["allocation_ratio"])}</span></div>')


def _provider(rp: Mapping[str, Any], kind: str = "") -> str:
    traits = ", ".join(_e(t) for t in rp["traits"]) or "none"
    aggs = ", ".join(_e(a) for a in rp["aggregates"]) or "none"
    children = "".join(_provider(c) for c in rp.get("children", []))
    label = f'<span class="kind">{_e(kind)}</span>' if kind else ""
    return (f'<div class="rp" data-provider="{_e(rp["uuid"])}"><div class="rp-name">{label}'
            f'{_e(rp["name"])} <span class="uuid">{_e(rp["uuid"])}</span></div>'
            f'{"".join(_bar(r) for r in rp["resources"])}'
            f'<details><summary>traits, aggregates</summary><div>traits: {traits}</div>'
            f'<div>aggregates: {aggs}</div></details>{children}</div>')


def _host(host: Mapping[str, Any]) -> str:
    badges = [f'<span class="badge {_e(host["state"])}">{_e(host["state"])}</span>']
    if host["forced_down"]:
        badges.append('<span class="badge down">forced down</span>')
    if host["disabled"]:
        why = f': {host["disabled_reason"]}' if host["disabled_reason"] else ""
        badges.append(f'<span class="badge disabled">disabled{_e(why)}</span>')
    tree = _provider(host["tree"]) if host["tree"] else '<p class="quiet">no provider</p>'
    sharing = "".join(_provider(s, "shared") for s in host["sharing"])
    return (f'<article class="host" data-host="{_e(host["host"])}"><header>'
            f'<b>{_e(host["host"])}</b> {"".join(badges)}<span class="where">zone '
            f'{_e(host["zone"])} &middot; cell {_e(host["cell"])} &middot; '
            f'{_e(host["servers"])} server(s)</span><a class="plan-drain" '
            f'href="{_e(drain_href(host["host"]))}">Plan drain</a></header>{tree}{sharing}'
            '</article>')


def _pager(name: str, data: Mapping[str, Any], query: Mapping[str, str]) -> str:
    def link(number: int, text: str) -> str:
        args = {f"{name}_{k}": v for k, v in query.items() if k != "page" and v}
        args[f"{name}_page"] = str(number)
        return f'<a class="page" href="?{_e(urlencode(args))}">{text}</a>'
    current, last = data["page"], data["pages"]
    prev = link(current - 1, "&larr; previous") if current > 1 else ""
    nxt = link(current + 1, "next &rarr;") if current < last else ""
    return (f'<div class="pager">{prev} <span>page {current} of {last} '
            f'({data["total"]} {name})</span> {nxt}</div>')


def _filter(name: str, query: Mapping[str, str], fields: Sequence[tuple[str, str]]) -> str:
    inputs = []
    for field, placeholder in fields:
        if field == "state":
            options = "".join(f'<option value="{_e(s)}"'
                              f'{" selected" if query.get("state") == s else ""}>'
                              f"{_e(s or 'any state')}</option>" for s in ("", *STATES))
            inputs.append(f'<select name="{name}_state">{options}</select>')
        else:
            inputs.append(f'<input name="{name}_{field}" placeholder="{_e(placeholder)}" '
                          f'value="{_e(query.get(field, ""))}">')
    return f'<form class="filter" method="get">{"".join(inputs)}<button>filter</button></form>'


def hosts(data: Mapping[str, Any], query: Mapping[str, str]) -> str:
    if not data["placement"]:
        note = '<p class="quiet">Placement is served elsewhere: provider trees not shown.</p>'
    else:
        note = ""
    body = "".join(_host(h) for h in data["hosts"]) or '<p class="quiet">No host matches.</p>'
    return (_filter("hosts", query, (("q", "host name contains"), ("state", ""))) + note
            + _pager("hosts", data, query) + f'<div class="hosts">{body}</div>')


def servers(data: Mapping[str, Any], query: Mapping[str, str]) -> str:
    rows = "".join(
        f'<tr class="server" data-server="{_e(s["uuid"])}"><td>{_e(s["name"])}'
        f'<div class="uuid">{_e(s["uuid"])}</div></td><td class="status">{_e(s["status"])}</td>'
        f'<td>{_e(s["task_state"] or "")}</td><td>{_e(s["host"] or "")}</td>'
        f'<td>{_e(s["flavor"])}</td><td>{_e(s["project"])}</td><td>{_fault(s["fault"])}</td>'
        f"</tr>" for s in data["servers"])
    head = ("<tr><th>server</th><th>status</th><th>task</th><th>host</th><th>flavor</th>"
            "<th>project</th><th>last fault</th></tr>")
    fields = (("q", "name contains, or uuid"), ("status", "status, e.g. ACTIVE"),
              ("host", "host"), ("project", "project id"))
    return (_filter("servers", query, fields) + _pager("servers", data, query)
            + f'<table class="servers"><thead>{head}</thead><tbody>{rows}</tbody></table>')


_TITLES = {"audit": "Accounting audit", "moves": "Moves in progress",
           "hosts": "Hosts and their resource providers", "servers": "Servers",
           "capacity": "Capacity: how many more of each flavor fit"}


def section(name: str, html: str, query: Mapping[str, str]) -> str:
    """A section as the page holds it; `data-query` is what the refresh asks again."""
    return (f'<section id="{name}" data-part="{name}" data-query="{_e(urlencode(query))}">'
            f'<h2>{_TITLES[name]}</h2><div class="body">{html}</div></section>')


def _document(title: str, body: str) -> str:
    return ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<title>{_e(title)}</title>'
            '<link rel="stylesheet" href="/dashboard/static/dashboard.css"></head>'
            f"<body>{body}</body></html>")


def _header(who: str, csrf: str | None, live: bool = True) -> str:
    logout = (f'<form method="post" action="/dashboard/logout" class="logout">'
              f'<input type="hidden" name="csrf" value="{_e(csrf)}"><button>sign out</button>'
              f"</form>" if csrf else "")
    state = ('<span id="live" class="live">live</span><span id="refreshed" class="quiet">'
              '</span>' if live else '<span class="quiet">a snapshot: not refreshed</span>')
    return (f'<header class="top"><h1><a href="/">stowage</a></h1><span class="quiet">'
            f'operators\' dashboard &middot; {_e(who)}</span>{state}{logout}</header>')


def page(parts: Mapping[str, str], who: str, csrf: str | None, refresh_ms: int) -> str:
    """The whole page: a header, then each section already rendered."""
    drain = f'<section id="plan-drain"><h2>Plan drain</h2>{plan_form()}</section>'
    sections = "".join(parts[name] for name in SECTIONS if name != "capacity")
    main = (f'<main data-refresh-ms="{refresh_ms}">{sections}{drain}{parts["capacity"]}'
            '</main>')
    script = '<script src="/dashboard/static/dashboard.js" defer></script>'
    return _document("stowage dashboard", _header(who, csrf) + main + script)


def drain_page(plan: Mapping[str, Any], who: str, csrf: str | None, verbose: bool) -> str:
    """A host's dry-run drain plan on a page of its own (not refreshed: a plan is a
    snapshot, made again when the page is loaded again)."""
    back = '<p><a href="/" id="back">&larr; back to the dashboard</a></p>'
    main = f'<main class="plan">{back}{drain_body(plan, verbose)}</main>'
    return _document(f"stowage: drain plan for {plan['host']}",
                     _header(who, csrf, live=False) + main)


def login_page(csrf: str, error: str = "", user: str = "", project: str = "admin") -> str:
    problem = f'<p class="error" id="login-error">{_e(error)}</p>' if error else ""
    form = (f'<form method="post" action="/dashboard/login" class="login" id="login">'
            f"<h1>stowage</h1>{problem}"
            f'<label>username <input name="username" value="{_e(user)}" autofocus></label>'
            '<label>password <input name="password" type="password"></label>'
            f'<label>project <input name="project" value="{_e(project)}"></label>'
            f'<input type="hidden" name="csrf" value="{_e(csrf)}"><button>sign in</button></form>')
    return _document("stowage: sign in", form)


def message_page(title: str, text: str) -> str:
    return _document(title, f'<main class="message"><h1>{_e(title)}</h1><p>{_e(text)}</p></main>')
