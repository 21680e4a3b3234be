"""Network agents (extension `agent`) over HTTP: the L2 agents of the compute hosts,
their liveness from the hosts' heartbeats, Neutron's admin-only policy (others list
none and find none), update, delete (and re-registration), on every backend."""

from __future__ import annotations

import datetime
import re
from concurrent.futures import ThreadPoolExecutor

import httpx
import sqlalchemy as sa

from stowage.compute import services
from stowage.compute import tables as ct
from stowage.timeutil import utcnow
from tests.functional import networking as nw
from tests.functional.conftest import MEMBER, READER, LiveServer, api_client

_TYPES = ["NIC Switch agent", "Open vSwitch agent"]
_STAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")


def _host(live: LiveServer, host: str, seen: datetime.datetime | None = None) -> None:
    """A compute host's nova-compute service, last heard from at `seen` (now)."""
    assert live.cells is not None
    cell = live.cells.compute_cells()[0]
    with live.cells.database(cell).write() as conn:
        services.ensure_service(conn, host, services.COMPUTE)
        conn.execute(ct.services.update().where(ct.services.c.host == host)
                     .values(last_seen_up=seen or utcnow()))


def _agents(client: httpx.Client, **query: str) -> list[dict[str, object]]:
    resp = client.get("/v2.0/agents", params=query)
    assert resp.status_code == 200, resp.text
    return list(resp.json()["agents"])


def test_each_compute_host_has_its_l2_agents(network: httpx.Client,
                                            live_stowage: LiveServer) -> None:
    _host(live_stowage, "c1")
    _host(live_stowage, "c2", utcnow() - datetime.timedelta(seconds=600))
    found = _agents(network)
    assert sorted((a["host"], a["agent_type"]) for a in found) == [
        ("c1", t) for t in _TYPES] + [("c2", t) for t in _TYPES]
    ovs = next(a for a in found if a["host"] == "c1" and a["agent_type"] == _TYPES[1])
    assert ovs["binary"] == "neutron-openvswitch-agent" and ovs["topic"] == "N/A"
    assert ovs["admin_state_up"] is True and ovs["alive"] is True
    assert ovs["description"] is None and ovs["availability_zone"] is None
    assert ovs["resources_synced"] is None
    for key in ("created_at", "started_at", "heartbeat_timestamp"):
        assert _STAMP.match(str(ovs[key])), ovs[key]
    assert not any(a["alive"] for a in found if a["host"] == "c2")
    # Ids are kept from one listing to the next, and show answers the same agent.
    assert sorted(a["id"] for a in _agents(network)) == sorted(a["id"] for a in found)
    shown = network.get(f"/v2.0/agents/{ovs['id']}").json()["agent"]
    assert shown["id"] == ovs["id"] and shown["host"] == "c1"
    assert [a["host"] for a in _agents(network, agent_type="NIC Switch agent",
                                       host="c2")] == ["c2"]
    assert network.get("/v2.0/extensions/agent").status_code == 200
    nw.neutron_error(network.get("/v2.0/extensions/dhcp_agent_scheduler"), 404,
                     "HTTPNotFound")


def test_devices_count_the_ports_bound_on_the_host(network: httpx.Client,
                                                   live_stowage: LiveServer) -> None:
    _host(live_stowage, "c1")
    net = nw.network(network)
    nw.subnet(network, net["id"])
    port = nw.port(network, net["id"])
    bound = network.put(f"/v2.0/ports/{port['id']}", json={"port": {
        "binding:host_id": "c1"}})
    assert bound.status_code == 200, bound.text
    devices = {a["agent_type"]: a["configurations"]["devices"]  # type: ignore[index]
               for a in _agents(network)}
    assert devices == {"Open vSwitch agent": 1, "NIC Switch agent": 0}


def test_only_admins_see_agents(network: httpx.Client, live_stowage: LiveServer) -> None:
    _host(live_stowage, "c1")
    agent_id = str(_agents(network)[0]["id"])
    for roles in (READER, MEMBER):
        with api_client(f"{live_stowage.url}/network", token="p1", roles=roles) as other:
            assert _agents(other) == []
            nw.neutron_error(other.get(f"/v2.0/agents/{agent_id}"), 404, "AgentNotFound")
            nw.neutron_error(other.put(f"/v2.0/agents/{agent_id}", json={"agent": {
                "admin_state_up": False}}), 404, "AgentNotFound")
            nw.neutron_error(other.delete(f"/v2.0/agents/{agent_id}"), 404, "AgentNotFound")
    shown = network.get(f"/v2.0/agents/{agent_id}").json()["agent"]
    assert shown["admin_state_up"] is True


def test_update_changes_state_and_description_only(network: httpx.Client,
                                                  live_stowage: LiveServer) -> None:
    _host(live_stowage, "c1")
    agent_id = str(_agents(network)[0]["id"])
    url = f"/v2.0/agents/{agent_id}"
    changed = network.put(url, json={"agent": {"admin_state_up": False,
                                               "description": "draining"}})
    assert changed.status_code == 200, changed.text
    assert changed.json()["agent"]["admin_state_up"] is False
    assert changed.json()["agent"]["description"] == "draining"
    for body in ({"host": "elsewhere"}, {"admin_state_up": "maybe"},
                 {"description": "x" * 256}, {"bogus": 1}):
        assert network.put(url, json={"agent": body}).status_code == 400, body
    shown = network.get(url).json()["agent"]
    assert (shown["admin_state_up"], shown["description"], shown["host"]) == (
        False, "draining", "c1")
    nw.neutron_error(network.put("/v2.0/agents/nope", json={"agent": {
        "admin_state_up": True}}), 404, "AgentNotFound")
    assert network.post("/v2.0/agents", json={"agent": {}}).status_code in (404, 405)


def test_delete_unregisters_until_the_host_is_heard_from(network: httpx.Client,
                                                         live_stowage: LiveServer) -> None:
    past = utcnow() - datetime.timedelta(seconds=600)
    _host(live_stowage, "dead", past)
    _host(live_stowage, "live")
    before = {(a["host"], a["agent_type"]): a["id"] for a in _agents(network)}
    for key in (("dead", _TYPES[1]), ("live", _TYPES[1])):
        assert network.delete(f"/v2.0/agents/{before[key]}").status_code == 204
        nw.neutron_error(network.get(f"/v2.0/agents/{before[key]}"), 404, "AgentNotFound")
        nw.neutron_error(network.delete(f"/v2.0/agents/{before[key]}"), 404,
                         "AgentNotFound")
    assert ("dead", _TYPES[1]) not in {(a["host"], a["agent_type"]) for a in _agents(network)}
    _host(live_stowage, "live", utcnow() + datetime.timedelta(seconds=1))
    after = {(a["host"], a["agent_type"]): a["id"] for a in _agents(network)}
    assert ("dead", _TYPES[1]) not in after
    assert after[("live", _TYPES[1])] != before[("live", _TYPES[1])]
    assert after[("dead", _TYPES[0])] == before[("dead", _TYPES[0])]


def test_concurrent_listings_register_each_agent_once(network: httpx.Client,
                                                     live_stowage: LiveServer) -> None:
    for i in range(3):
        _host(live_stowage, f"c{i}")
    with ThreadPoolExecutor(4) as pool:
        lists = list(pool.map(lambda _: _agents(network), range(6)))
    assert all(len(found) == 6 for found in lists)
    assert len({a["id"] for found in lists for a in found}) == 6
    with live_stowage.db.read() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM network_agents")).scalar() == 6
