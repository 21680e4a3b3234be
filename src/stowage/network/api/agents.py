"""`/v2.0/agents`: list, show, update (`admin_state_up`, `description`), delete
(extension `agent`; which agents there are: network/agents.py).

The rules are admin-only (`get_agent`, `update_agent`, `delete_agent`): anybody
else lists no agents and finds none (404 AgentNotFound), as Neutron's policy
filtering answers them.
"""

from __future__ import annotations

import datetime
from typing import Any

from stowage.compute.cells import Cells
from stowage.network import agents
from stowage.network.api import common
from stowage.network.api.attributes import Attr, boolean, parse, read_only, string
from stowage.timeutil import utcnow
from stowage.web.http import Request, Response, empty_response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]

ATTRS = (
    Attr("admin_state_up", boolean, post=False),
    Attr("description", lambda v: None if v is None else string(255)(v), post=False),
    *read_only("id", "agent_type", "binary", "topic", "host", "alive", "configurations",
               "availability_zone", "started_at", "created_at", "heartbeat_timestamp",
               "resources_synced", "resource_versions"),
)
FILTERS = ("id", "agent_type", "binary", "topic", "host", "admin_state_up", "alive",
           "availability_zone", "description")
_TARGET: dict[str, object] = {}


def _stamp(when: datetime.datetime | None) -> str | None:
    """Neutron's agent timestamps: `YYYY-MM-DD HH:MM:SS`, UTC."""
    return None if when is None else when.strftime("%Y-%m-%d %H:%M:%S")


def _view(agent: agents.Agent, host: agents.HostState | None,
          bound: dict[tuple[str, str], int]) -> dict[str, Any]:
    heard = host.last_seen_up if host is not None else None
    alive = heard is not None and abs(
        (utcnow() - heard).total_seconds()) <= agents.AGENT_DOWN_TIME
    kind = agent.kind
    devices = sum(bound.get((agent.host, vif), 0) for vif in kind.vif_types)
    return {"id": agent.id, "agent_type": kind.agent_type, "binary": kind.binary,
            "topic": "N/A", "host": agent.host, "admin_state_up": agent.admin_state_up,
            "alive": alive, "configurations": {**kind.configurations, "devices": devices},
            "availability_zone": None, "description": agent.description,
            "started_at": _stamp(host.started_at if host is not None else agent.created_at),
            "created_at": _stamp(agent.created_at),
            "heartbeat_timestamp": _stamp(heard or agent.created_at),
            "resources_synced": None}


def _cells(req: Request) -> Cells:
    cells: Cells | None = req.app.cells
    if cells is None:
        cells = req.app.cells = Cells(req.app.db)
    return cells


def _views(req: Request, ids: list[str] | None = None) -> list[dict[str, Any]]:
    """The agents (registering those of hosts heard from for the first time)."""
    hosts = agents.compute_hosts(_cells(req))
    if common.read(req, lambda conn: agents.needs_registering(conn, hosts)):
        common.write(req, lambda conn: agents.register(conn, hosts))

    def views(conn: Any) -> list[dict[str, Any]]:
        found = agents.list_agents(conn, ids)
        bound = agents.devices(conn, sorted({a.host for a in found}))
        return [_view(a, hosts.get(a.host), bound) for a in found]
    return common.read(req, views)


def _allowed(req: Request) -> bool:
    return common.guard(req).allows("get_agent", _TARGET)


def list_agents(req: Request) -> Response:
    filters = common.query_filters(req, FILTERS)
    shown = _views(req, filters.get("id")) if _allowed(req) else []
    return common.listing(req, shown, filters, "agents")


def _one(req: Request, agent_id: str) -> dict[str, Any]:
    if not _allowed(req):
        raise agents.missing(agent_id)
    found = _views(req, [agent_id])
    if not found:
        raise agents.missing(agent_id)
    return found[0]


def show_agent(req: Request) -> Response:
    view = _one(req, req.params["agent_id"])
    return json_response({"agent": common.select_fields(view, common.fields_of(req))})


def _check(req: Request, action: str, agent_id: str) -> None:
    """404 to whoever may not see agents, 403 to one who sees them but may not `action`."""
    common.guard(req).check(action, _TARGET, missing=lambda: agents.missing(agent_id))


def update_agent(req: Request) -> Response:
    agent_id = req.params["agent_id"]
    _check(req, "update_agent", agent_id)
    values = parse(req, "agent", ATTRS, create=False, action="update_agent")
    common.write(req, lambda conn: agents.update(conn, agent_id, values))
    return json_response({"agent": _one(req, agent_id)})


def delete_agent(req: Request) -> Response:
    agent_id = req.params["agent_id"]
    _check(req, "delete_agent", agent_id)
    common.write(req, lambda conn: agents.delete(conn, agent_id))
    return empty_response(204)


_ONE = "/v2.0/agents/{agent_id}"
ROUTES = [
    Route("GET", "/v2.0/agents", list_agents),
    Route("GET", _ONE, show_agent),
    Route("PUT", _ONE, update_agent, json_body=True),
    Route("DELETE", _ONE, delete_agent),
]
