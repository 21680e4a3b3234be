"""Network agents (extension `agent`): the L2 agents of the compute hosts.

stowage runs no Neutron agents, but binds ports as if every compute host ran
the two whose drivers mechanism.py imitates, the Open vSwitch agent and the
SR-IOV NIC agent. Those agents are what `/v2.0/agents` shows: one of each
kind per host that has a `nova-compute` service, living and dying with it,
since the simulated host runs both in one process and one heartbeat thread:

- `alive` / `heartbeat_timestamp`: the host's nova-compute heartbeat
  (`last_seen_up`), alive when younger than Neutron's `agent_down_time`;
- `started_at`: when the host's service registered;
- `configurations.devices`: the ports bound on the host with the agent's vif type.

What an admin changes (`admin_state_up`, `description`) and the agent's id
live in `network_agents`, one row per registration. The first listing that
finds a host without its row registers it (Neutron's agent registers on its
first `report_state`). Deleting an agent keeps its row as a tombstone: a
host heard from again after the delete registers anew, with a new id, as a
live Neutron agent does on its next report; a dead one stays gone.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from stowage.compute import services
from stowage.compute.cells import Cells
from stowage.errors import DomainError
from stowage.network import errors as e
from stowage.network import tables as t
from stowage.network.standard import try_insert, utcnow

__all__ = ["Kind", "KINDS", "HostState", "Agent", "AGENT_DOWN_TIME", "missing",
           "compute_hosts", "register", "list_agents", "get", "update", "delete", "devices"]

# Neutron's agent_down_time default (seconds).
AGENT_DOWN_TIME = 75.0
_A = t.network_agents
_B = t.port_bindings


@dataclass(frozen=True)
class Kind:
    agent_type: str
    binary: str
    # The vif types of the ports this agent wires (mechanism.py).
    vif_types: tuple[str, ...]
    configurations: Mapping[str, Any]


KINDS = (
    Kind("Open vSwitch agent", "neutron-openvswitch-agent", ("ovs",),
         {"bridge_mappings": {}, "datapath_type": "system", "integration_bridge": "br-int",
          "ovs_hybrid_plug": False, "tunnel_types": [], "l2_population": False,
          "extensions": []}),
    Kind("NIC Switch agent", "neutron-sriov-nic-agent", ("hw_veb", "hostdev_physical"),
         {"device_mappings": {}, "extensions": [], "resource_provider_bandwidths": {}}),
)
_BY_TYPE = {k.agent_type: k for k in KINDS}


@dataclass(frozen=True)
class HostState:
    """What the host's nova-compute service says of it."""
    host: str
    started_at: datetime.datetime
    last_seen_up: datetime.datetime | None


@dataclass(frozen=True)
class Agent:
    id: str
    kind: Kind
    host: str
    admin_state_up: bool
    description: str | None
    created_at: datetime.datetime


def missing(agent_id: str) -> DomainError:
    return e.not_found("AgentNotFound", f"Agent {agent_id} could not be found.")


def compute_hosts(cells: Cells) -> dict[str, HostState]:
    """Every host with a nova-compute service, in any cell."""
    found: dict[str, HostState] = {}
    for _cells, db in cells.distinct(cells.compute_cells()):
        with db.read() as conn:
            for service in services.list_services(conn, binary=services.COMPUTE):
                found[service.host] = HostState(service.host, service.created_at,
                                                service.last_seen_up)
    return found


def _agent(row: Any) -> Agent:
    return Agent(row.id, _BY_TYPE[row.agent_type], row.host, row.admin_state_up,
                 row.description, row.created_at)


def _unregistered(conn: Connection, hosts: Mapping[str, HostState]
                  ) -> list[tuple[Kind, HostState]]:
    """The (kind, host) pairs with no live agent, less those deleted since the host was
    last heard from."""
    rows = list(conn.execute(sa.select(_A.c.agent_type, _A.c.host, _A.c.live_host,
                                       _A.c.deleted_at).where(_A.c.host.in_(list(hosts)))))
    live = {(r.agent_type, r.host) for r in rows if r.live_host is not None}
    deleted: dict[tuple[str, str], datetime.datetime] = {}
    for r in rows:
        if r.deleted_at is not None:
            key = (r.agent_type, r.host)
            deleted[key] = max(r.deleted_at, deleted.get(key, r.deleted_at))
    wanted = []
    for state in hosts.values():
        for kind in KINDS:
            key = (kind.agent_type, state.host)
            gone = deleted.get(key)
            heard = state.last_seen_up
            if key not in live and (gone is None or (heard is not None and heard > gone)):
                wanted.append((kind, state))
    return wanted


def needs_registering(conn: Connection, hosts: Mapping[str, HostState]) -> bool:
    return bool(hosts) and bool(_unregistered(conn, hosts))


def register(conn: Connection, hosts: Mapping[str, HostState]) -> None:
    """Register the agents of hosts that have none (a concurrent registration of the same
    agent wins the unique key; this one then changes nothing)."""
    now = utcnow()
    for kind, state in _unregistered(conn, hosts):
        try_insert(conn, _A, {"id": str(uuid.uuid4()), "agent_type": kind.agent_type,
                              "host": state.host, "live_host": state.host,
                              "admin_state_up": True, "description": None,
                              "created_at": now, "deleted_at": None})


def list_agents(conn: Connection, ids: Sequence[str] | None = None) -> list[Agent]:
    query = sa.select(_A).where(_A.c.live_host.is_not(None)).order_by(_A.c.created_at,
                                                                       _A.c.id)
    if ids is not None:
        query = query.where(_A.c.id.in_(list(ids)))
    return [_agent(row) for row in conn.execute(query)]


def get(conn: Connection, agent_id: str, for_update: bool = False) -> Agent:
    query = sa.select(_A).where(_A.c.id == agent_id, _A.c.live_host.is_not(None))
    row = conn.execute(query.with_for_update() if for_update else query).first()
    if row is None:
        raise missing(agent_id)
    return _agent(row)


def update(conn: Connection, agent_id: str, values: Mapping[str, Any]) -> Agent:
    """Change `admin_state_up` / `description` (the row lock orders concurrent writers)."""
    get(conn, agent_id, for_update=True)
    changes = {k: values[k] for k in ("admin_state_up", "description") if k in values}
    if changes:
        conn.execute(_A.update().where(_A.c.id == agent_id).values(**changes))
    return get(conn, agent_id)


def delete(conn: Connection, agent_id: str) -> None:
    """Unregister the agent: its row stays, without `live_host`, as the tombstone that
    keeps a dead host's agent from registering again."""
    done = conn.execute(_A.update().where(_A.c.id == agent_id, _A.c.live_host.is_not(None))
                        .values(live_host=None, deleted_at=utcnow()))
    if done.rowcount == 0:
        raise missing(agent_id)


def devices(conn: Connection, hosts: Sequence[str]) -> dict[tuple[str, str], int]:
    """(host, vif type) -> how many ports are bound there."""
    if not hosts:
        return {}
    rows = conn.execute(sa.select(_B.c.host, _B.c.vif_type, sa.func.count())
                        .where(_B.c.host.in_(list(hosts)), _B.c.status == "ACTIVE")
                        .group_by(_B.c.host, _B.c.vif_type))
    return {(r[0], r[1]): int(r[2]) for r in rows}
