"""The multiple port bindings extension over HTTP: a live migration's binding dance, its
refusals, and that a port always has exactly one ACTIVE binding."""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest

from tests.functional import networking as nw
from tests.functional.conftest import MEMBER, LiveServer, api_client


def _bindings(client: httpx.Client, port_id: str) -> dict[str, dict[str, Any]]:
    """Host -> binding, after checking that exactly one is ACTIVE."""
    resp = client.get(f"/v2.0/ports/{port_id}/bindings")
    assert resp.status_code == 200, resp.text
    found = {b["host"]: b for b in resp.json()["bindings"]}
    assert [b["status"] for b in found.values()].count("ACTIVE") == 1, found
    return found


def _compute_port(client: httpx.Client, host: str = "src", **fields: Any) -> dict[str, Any]:
    net = nw.physnet(client, vlan=100)
    return nw.port(client, net["id"], device_owner=nw.COMPUTE, device_id="vm1",
                   **{"binding:host_id": host, **fields})


def test_live_migration_binding_lifecycle(network: httpx.Client) -> None:
    port = _compute_port(network, **{"binding:profile": {"allocation": "rp-src"}})
    url = f"/v2.0/ports/{port['id']}/bindings"
    assert _bindings(network, port["id"])["src"]["status"] == "ACTIVE"
    dest = nw.made(network.post(url, json={"binding": {
        "host": "dst", "profile": {"allocation": "rp-dst"}}}), "binding")
    assert (dest["status"], dest["vif_type"], dest["vnic_type"], dest["profile"]) == \
        ("INACTIVE", "ovs", "normal", {"allocation": "rp-dst"})
    shown = network.get(f"/v2.0/ports/{port['id']}").json()["port"]
    assert (shown["binding:host_id"], shown["binding:profile"]) == \
        ("src", {"allocation": "rp-src"})
    for host in ("dst", "src"):
        message = nw.neutron_error(network.post(url, json={"binding": {"host": host}}), 409,
                                   "PortBindingAlreadyExists")
        assert message == f"Binding for port {port['id']} on host {host} already exists."
    assert network.get(f"{url}/dst").json()["binding"] == dest
    updated = nw.made(network.put(f"{url}/dst", json={"binding": {
        "profile": {"allocation": "rp-dst2"}}}), "binding", 200)
    assert (updated["profile"], updated["status"]) == ({"allocation": "rp-dst2"}, "INACTIVE")
    active = nw.made(network.put(f"{url}/dst/activate"), "binding", 200)
    assert (active["host"], active["status"]) == ("dst", "ACTIVE")
    after = _bindings(network, port["id"])
    assert (after["src"]["status"], after["src"]["profile"]) == \
        ("INACTIVE", {"allocation": "rp-src"})
    shown = network.get(f"/v2.0/ports/{port['id']}").json()["port"]
    assert (shown["binding:host_id"], shown["binding:profile"], shown["status"]) == \
        ("dst", {"allocation": "rp-dst2"}, "ACTIVE")
    assert shown["revision_number"] == 3
    assert network.delete(f"{url}/src").status_code == 204
    assert list(_bindings(network, port["id"])) == ["dst"]
    nw.neutron_error(network.delete(f"{url}/src"), 404, "PortBindingNotFound")


def test_activation_refusals(network: httpx.Client) -> None:
    port = _compute_port(network)
    url = f"/v2.0/ports/{port['id']}/bindings"
    message = nw.neutron_error(network.put(f"{url}/src/activate"), 409,
                               "PortBindingAlreadyActive")
    assert message == f"Binding for port {port['id']} on host src is already active."
    message = nw.neutron_error(network.put(f"{url}/elsewhere/activate"), 404,
                               "PortBindingNotFound")
    assert message == (f"Binding for port {port['id']} for host elsewhere could not be "
                       "found.")
    nw.neutron_error(network.get(f"{url}/elsewhere"), 404, "PortBindingNotFound")
    nw.neutron_error(network.put(f"{url}/elsewhere", json={"binding": {"profile": {}}}),
                     404, "PortBindingNotFound")
    assert list(_bindings(network, port["id"])) == ["src"]


def test_deleting_the_active_binding_unbinds_the_port(network: httpx.Client) -> None:
    port = _compute_port(network)
    url = f"/v2.0/ports/{port['id']}/bindings"
    network.post(url, json={"binding": {"host": "dst"}})
    assert network.delete(f"{url}/src").status_code == 204
    left = _bindings(network, port["id"])
    assert (left[""]["status"], left[""]["vif_type"], left["dst"]["status"]) == \
        ("ACTIVE", "unbound", "INACTIVE")
    shown = network.get(f"/v2.0/ports/{port['id']}").json()["port"]
    assert (shown["binding:host_id"], shown["binding:vif_type"], shown["status"]) == \
        ("", "unbound", "DOWN")
    nw.made(network.put(f"{url}/dst/activate"), "binding", 200)
    assert list(_bindings(network, port["id"])) == ["dst"]


def test_unbound_port_gets_its_first_host_by_activation(network: httpx.Client) -> None:
    port = _compute_port(network, host="")
    url = f"/v2.0/ports/{port['id']}/bindings"
    assert _bindings(network, port["id"])[""]["vif_type"] == "unbound"
    network.post(url, json={"binding": {"host": "h1", "vnic_type": "direct"}})
    assert network.get(f"/v2.0/ports/{port['id']}").json()["port"]["binding:host_id"] == ""
    nw.made(network.put(f"{url}/h1/activate"), "binding", 200)
    assert list(_bindings(network, port["id"])) == ["h1"]
    shown = network.get(f"/v2.0/ports/{port['id']}").json()["port"]
    assert (shown["binding:host_id"], shown["binding:vnic_type"], shown["binding:vif_type"]) \
        == ("h1", "direct", "hw_veb")


def test_host_change_rewrites_the_active_binding(network: httpx.Client) -> None:
    port = _compute_port(network)
    url = f"/v2.0/ports/{port['id']}"
    network.post(f"{url}/bindings", json={"binding": {"host": "dst"}})
    nw.neutron_error(network.put(url, json={"port": {"binding:host_id": "dst"}}), 409,
                     "PortBindingAlreadyExists")
    moved = nw.made(network.put(url, json={"port": {"binding:host_id": "other",
                                                    "binding:profile": {"k": "v"}}}),
                    "port", 200)
    assert (moved["binding:host_id"], moved["binding:profile"]) == ("other", {"k": "v"})
    after = _bindings(network, port["id"])
    assert sorted(after) == ["dst", "other"]
    assert after["other"]["status"] == "ACTIVE"


def test_a_binding_nobody_can_bind_is_not_stored(network: httpx.Client) -> None:
    net = nw.network(network)
    port = nw.port(network, net["id"], device_owner=nw.COMPUTE, **{"binding:host_id": "src"})
    url = f"/v2.0/ports/{port['id']}/bindings"
    message = nw.neutron_error(network.post(url, json={"binding": {
        "host": "dst", "vnic_type": "direct"}}), 500, "PortBindingError")
    assert message == f"Binding for port {port['id']} on host dst could not be created or " \
                      "updated."
    assert list(_bindings(network, port["id"])) == ["src"]


def test_only_server_ports_have_bindings(network: httpx.Client) -> None:
    net = nw.network(network)
    plain = nw.port(network, net["id"], device_owner="network:dhcp")
    message = nw.neutron_error(network.get(f"/v2.0/ports/{plain['id']}/bindings"), 400,
                               "BadRequest")
    assert message == (f"Bad port request: Invalid port {plain['id']}. Operation only valid "
                       "on compute ports.")
    nw.neutron_error(network.post(f"/v2.0/ports/{plain['id']}/bindings",
                                  json={"binding": {"host": "h"}}), 400, "BadRequest")
    nw.neutron_error(network.get("/v2.0/ports/00000000-0000-0000-0000-000000000000/bindings"),
                     404, "PortNotFound")


@pytest.mark.parametrize(("body", "reason"), [
    ({"binding": {}}, "Required attribute 'host' not specified"),
    ({"binding": {"host": ""}}, "'' is not a valid host name"),
    ({"binding": {"host": "h", "vnic_type": "fancy"}}, "'fancy' is not in"),
    ({"binding": {"host": "h", "profile": "x"}}, "'x' is not a dictionary"),
    ({"binding": {"host": "h", "status": "ACTIVE"}}, "Attribute 'status' not allowed in POST"),
])
def test_bad_binding_bodies(network: httpx.Client, body: dict[str, Any], reason: str) -> None:
    port = _compute_port(network)
    resp = network.post(f"/v2.0/ports/{port['id']}/bindings", json=body)
    assert reason in nw.neutron_error(resp, 400, "HTTPBadRequest")
    assert list(_bindings(network, port["id"])) == ["src"]


def test_a_profile_no_json_column_holds_is_refused(network: httpx.Client) -> None:
    port = _compute_port(network)
    # 1e400 decodes to inf: MySQL's JSON column refused it (500), SQLite kept Infinity.
    resp = network.post(f"/v2.0/ports/{port['id']}/bindings",
                        content=b'{"binding": {"host": "h", "profile": {"a": 1e400}}}',
                        headers={"content-type": "application/json"})
    assert "holds a number out of range" in nw.neutron_error(resp, 400, "HTTPBadRequest")
    assert list(_bindings(network, port["id"])) == ["src"]


def test_bindings_are_admin_only(live_stowage: LiveServer, network: httpx.Client) -> None:
    net = nw.network(network, shared=True)
    with api_client(f"{live_stowage.url}/network", token="demo:p1", roles=MEMBER) as demo:
        port = nw.port(demo, net["id"], device_owner=nw.COMPUTE)
        url = f"/v2.0/ports/{port['id']}/bindings"
        for resp in (demo.get(url), demo.post(url, json={"binding": {"host": "h"}}),
                     demo.put(f"{url}/h/activate"), demo.delete(f"{url}/h")):
            nw.neutron_error(resp, 403, "PolicyNotAuthorized")
    assert list(_bindings(network, port["id"])) == [""]


def test_concurrent_activations_leave_one_active(live_stowage: LiveServer,
                                                 network: httpx.Client) -> None:
    port = _compute_port(network)
    url = f"/v2.0/ports/{port['id']}/bindings"
    hosts = [f"dst{n}" for n in range(4)]
    for host in hosts:
        nw.made(network.post(url, json={"binding": {"host": host}}), "binding")
    start = threading.Barrier(len(hosts))
    codes: list[int] = []

    def activate(host: str) -> None:
        with api_client(f"{live_stowage.url}/network") as client:
            start.wait()
            codes.append(client.put(f"{url}/{host}/activate").status_code)

    threads = [threading.Thread(target=activate, args=(h,)) for h in hosts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert codes == [200] * len(hosts)
    after = _bindings(network, port["id"])
    active = next(h for h, b in after.items() if b["status"] == "ACTIVE")
    assert network.get(f"/v2.0/ports/{port['id']}").json()["port"]["binding:host_id"] == \
        active
    assert sorted(after) == sorted(["src", *hosts])
