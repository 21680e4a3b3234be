"""Booting servers with ports: QoS bandwidth and SR-IOV VFs in the allocation, bindings right.

    host1  br-physnet0 (10000 kbps each way), ens5 on physnet1 (4 VFs)
    host2  br-physnet0 only (when a test adds it)

Every test reads as the user's calls: create ports (or name networks), POST
/servers, then what Placement says each consumer holds per provider
(device providers included), what each port's binding says, which PF each
VF came from, and the audit.
"""

from __future__ import annotations

import threading

import pytest

from tests.functional import networking as n
from tests.functional.conftest import MEMBER, Cloud
from tests.functional.ports import (
    QOS,
    QOS_VF,
    VF,
    Nets,
    boot,
    holding,
    net_host,
    vf_usage,
)
from tests.functional.servers import (
    assert_invariants,
    flavor,
    flavor_amounts,
    image,
    server,
    settle,
)

SMALL = flavor_amounts(1, 512, 5)


@pytest.fixture
def ids(cloud: Cloud) -> tuple[str, str]:
    return flavor(cloud, "small", 1, 512, 5), image(cloud)


def test_boot_without_ports_holds_the_flavor_only(cloud: Cloud, nets: Nets,
                                                  ids: tuple[str, str]) -> None:
    h1 = net_host(cloud, "host1", vfs=4)
    vm = boot(cloud, "vm", *ids, "none")
    assert holding(cloud, vm) == {h1.node: SMALL}
    assert server(cloud, vm)["addresses"] == {}
    assert_invariants(cloud)


def test_boot_with_one_qos_port(cloud: Cloud, nets: Nets, ids: tuple[str, str]) -> None:
    h1 = net_host(cloud, "host1")
    port = nets.qos_port()
    vm = boot(cloud, "vm", *ids, [{"port": port}])
    view = server(cloud, vm)
    assert view["status"] == "ACTIVE", view
    assert holding(cloud, vm) == {h1.node: SMALL, h1.bridge: QOS}
    nets.assert_bound(port, vm, "host1", h1.bridge)
    mac = nets.port(port)["mac_address"]
    [ip] = nets.port(port)["fixed_ips"]
    assert view["addresses"] == {"net0": [{"version": 4, "addr": ip["ip_address"],
                                           "OS-EXT-IPS:type": "fixed",
                                           "OS-EXT-IPS-MAC:mac_addr": mac}]}
    # PUT answers before 2.75 show plain addresses (Nova's extend_address=False).
    plain = {"net0": [{"version": 4, "addr": ip["ip_address"]}]}
    old = cloud.client("admin", version="2.74")
    answer = old.put(f"/servers/{vm}", json={"server": {"name": "vm2"}}).json()["server"]
    assert answer["addresses"] == plain
    answer = cloud.compute.put(f"/servers/{vm}", json={"server": {"name": "vm3"}}).json()
    assert answer["server"]["addresses"] == view["addresses"]
    assert_invariants(cloud)


def test_boot_with_a_normal_and_a_direct_qos_port(cloud: Cloud, nets: Nets,
                                                  ids: tuple[str, str]) -> None:
    h1 = net_host(cloud, "host1", vfs=4)
    normal, direct = nets.qos_port("a"), nets.qos_port("b", vnic="direct")
    vm = boot(cloud, "vm", *ids, [{"port": normal}, {"port": direct}])
    assert server(cloud, vm)["status"] == "ACTIVE"
    assert holding(cloud, vm) == {h1.node: SMALL, h1.bridge: QOS, h1.pf: QOS_VF}
    nets.assert_bound(normal, vm, "host1", h1.bridge)
    nets.assert_bound(direct, vm, "host1", h1.pf)
    profile = nets.port(direct)["binding:profile"]
    assert profile["physical_network"] == "physnet1"
    assert profile["pci_slot"].startswith("0000:81:")
    assert vf_usage(cloud, "host1") == {"ens5": 1}
    assert cloud.plane.agent("host1").pci.vfs_held((vm, "")) == {"ens5": 1}
    assert list(server(cloud, vm)["addresses"]) == ["net0", "net1"]
    assert_invariants(cloud)


def test_direct_port_without_qos_still_takes_a_vf(cloud: Cloud, nets: Nets,
                                                  ids: tuple[str, str]) -> None:
    h1 = net_host(cloud, "host1", vfs=2)
    port = nets.qos_port(vnic="direct", qos=False)
    vm = boot(cloud, "vm", *ids, [{"port": port}])
    assert holding(cloud, vm) == {h1.node: SMALL, h1.pf: {VF: 1}}
    nets.assert_bound(port, vm, "host1", None)
    assert vf_usage(cloud, "host1") == {"ens5": 1}
    assert_invariants(cloud)


def test_boot_on_a_network_creates_the_port_and_delete_deletes_it(
        cloud: Cloud, nets: Nets, ids: tuple[str, str]) -> None:
    h1 = net_host(cloud, "host1")
    vm = boot(cloud, "vm", *ids, [{"uuid": nets.net0["id"], "fixed_ip": "10.0.0.42"}])
    assert holding(cloud, vm) == {h1.node: SMALL}
    [port] = n.ids(nets.client.get("/v2.0/ports", params={"device_id": vm}), "ports")
    nets.assert_bound(port, vm, "host1", None)
    assert server(cloud, vm)["addresses"]["net0"][0]["addr"] == "10.0.0.42"
    assert cloud.compute.delete(f"/servers/{vm}").status_code == 204
    settle(cloud)
    assert nets.client.get(f"/v2.0/ports/{port}").status_code == 404
    assert_invariants(cloud)


def test_delete_unbinds_the_users_port(cloud: Cloud, nets: Nets, ids: tuple[str, str]) -> None:
    h1 = net_host(cloud, "host1", vfs=2)
    port = nets.qos_port(vnic="direct")
    vm = boot(cloud, "vm", *ids, [{"port": port}])
    assert cloud.compute.delete(f"/servers/{vm}").status_code == 204
    settle(cloud)
    nets.assert_unbound(port)
    assert holding(cloud, vm) == {}
    assert vf_usage(cloud, "host1") == {"ens5": 0}
    again = boot(cloud, "again", *ids, [{"port": port}])
    assert holding(cloud, again) == {h1.node: SMALL, h1.pf: QOS_VF}
    assert_invariants(cloud)


def test_port_in_use_is_409(cloud: Cloud, nets: Nets, ids: tuple[str, str]) -> None:
    net_host(cloud, "host1")
    port = nets.qos_port()
    boot(cloud, "vm", *ids, [{"port": port}])
    resp = cloud.compute.post("/servers", json={"server": {
        "name": "vm2", "flavorRef": ids[0], "imageRef": ids[1], "networks": [{"port": port}]}})
    assert resp.status_code == 409, resp.text
    assert resp.json()["conflictingRequest"]["message"] == f"Port {port} is still in use."


def test_two_boots_racing_for_one_port_one_wins(cloud: Cloud, nets: Nets,
                                                ids: tuple[str, str]) -> None:
    h1 = net_host(cloud, "host1")
    port = nets.qos_port()
    body = {"server": {"name": "vm", "flavorRef": ids[0], "imageRef": ids[1],
                       "networks": [{"port": port}]}}
    codes: list[int] = []
    barrier = threading.Barrier(2)

    def post() -> None:
        with cloud.client("admin") as client:
            barrier.wait()
            codes.append(client.post("/servers", json=body).status_code)

    threads = [threading.Thread(target=post) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    settle(cloud)
    assert sorted(codes) == [202, 409]
    [vm] = [s["id"] for s in cloud.compute.get("/servers").json()["servers"]]
    assert holding(cloud, vm) == {h1.node: SMALL, h1.bridge: QOS}
    assert_invariants(cloud)


def test_unknown_port_and_network_are_400(cloud: Cloud, nets: Nets,
                                          ids: tuple[str, str]) -> None:
    net_host(cloud, "host1")
    missing = "00000000-0000-0000-0000-000000000001"
    for networks, message in (([{"port": missing}], f"Port id {missing} could not be found."),
                              ([{"uuid": missing}],
                               f"Network {missing} could not be found.")):
        resp = cloud.compute.post("/servers", json={"server": {
            "name": "vm", "flavorRef": ids[0], "imageRef": ids[1], "networks": networks}})
        assert resp.status_code == 400, resp.text
        assert resp.json()["badRequest"]["message"] == message


def test_qos_port_before_2_72_is_400(cloud: Cloud, nets: Nets, ids: tuple[str, str]) -> None:
    net_host(cloud, "host1")
    port = nets.qos_port()
    with cloud.client("admin", "2.71") as old:
        resp = old.post("/servers", json={"server": {
            "name": "vm", "flavorRef": ids[0], "imageRef": ids[1], "networks": [{"port": port}]}})
    assert resp.status_code == 400, resp.text
    assert "until microversion 2.72" in resp.json()["badRequest"]["message"]


def test_auto_and_default_networks(cloud: Cloud, nets: Nets, ids: tuple[str, str]) -> None:
    net_host(cloud, "host1")
    # Two networks the project may use: "auto" cannot choose.
    resp = cloud.compute.post("/servers", json={"server": {
        "name": "vm", "flavorRef": ids[0], "imageRef": ids[1], "networks": "auto"}})
    assert resp.status_code == 409, resp.text
    assert resp.json()["conflictingRequest"]["message"] == (
        "Multiple possible networks found, use a Network ID to be more specific.")
    with cloud.client("demo:p1", roles=MEMBER) as demo:
        # No network of its own: nothing to auto-allocate from.
        resp = demo.post("/servers", json={"server": {
            "name": "vm", "flavorRef": ids[0], "imageRef": ids[1], "networks": "auto"}})
        assert resp.status_code == 400, resp.text
        assert resp.json()["badRequest"]["message"] == (
            "Unable to automatically allocate a network for project p1")
    # One network: "auto" and the old default (no networks before 2.37) take it.
    nets.client.delete(f"/v2.0/networks/{nets.net1['id']}")
    vm = boot(cloud, "vm", *ids, "auto")
    assert list(server(cloud, vm)["addresses"]) == ["net0"]
    with cloud.client("admin", "2.36") as old:
        resp = old.post("/servers", json={"server": {
            "name": "old", "flavorRef": ids[0], "imageRef": ids[1]}})
        assert resp.status_code == 202, resp.text
    settle(cloud)
    assert list(server(cloud, resp.json()["server"]["id"])["addresses"]) == ["net0"]
    assert_invariants(cloud)


def test_not_enough_bandwidth_anywhere_is_no_valid_host(cloud: Cloud, nets: Nets,
                                                        ids: tuple[str, str]) -> None:
    net_host(cloud, "host1", bw=1500)
    port = nets.qos_port()
    vm = boot(cloud, "vm", *ids, [{"port": port}])
    view = server(cloud, vm)
    assert view["status"] == "ERROR"
    assert "No valid host" in view["fault"]["message"] or \
        "not enough hosts" in view["fault"]["message"]
    assert holding(cloud, vm) == {}
    nets.assert_unbound(port)
    assert_invariants(cloud)


def test_network_with_a_qos_policy_aborts_the_build(cloud: Cloud, nets: Nets,
                                                    ids: tuple[str, str]) -> None:
    net_host(cloud, "host1")
    resp = nets.client.put(f"/v2.0/networks/{nets.net0['id']}",
                           json={"network": {"qos_policy_id": nets.qos["id"]}})
    assert resp.status_code == 200, resp.text
    vm = boot(cloud, "vm", *ids, [{"uuid": nets.net0["id"]}])
    view = server(cloud, vm)
    assert view["status"] == "ERROR"
    assert "Failed to allocate the network(s), not rescheduling." in view["fault"]["message"]
    assert holding(cloud, vm) == {}
    assert n.ids(nets.client.get("/v2.0/ports", params={"device_id": vm}), "ports") == []
    assert_invariants(cloud)


def test_os_interface_lists_and_shows_the_servers_ports(cloud: Cloud, nets: Nets,
                                                        ids: tuple[str, str]) -> None:
    net_host(cloud, "host1")
    port, other = nets.qos_port("a"), nets.qos_port("b")
    vm = boot(cloud, "vm", *ids, [{"port": port}, {"uuid": nets.net0["id"]}])
    listed = cloud.compute.get(f"/servers/{vm}/os-interface")
    assert listed.status_code == 200, listed.text
    attachments = listed.json()["interfaceAttachments"]
    assert len(attachments) == 2
    shown = cloud.compute.get(f"/servers/{vm}/os-interface/{port}").json()["interfaceAttachment"]
    details = nets.port(port)
    assert shown == {"port_id": port, "net_id": nets.net0["id"],
                     "mac_addr": details["mac_address"], "port_state": "ACTIVE",
                     "fixed_ips": details["fixed_ips"], "tag": None}
    assert shown in attachments
    resp = cloud.compute.get(f"/servers/{vm}/os-interface/{other}")
    assert resp.status_code == 404, resp.text
    assert resp.json()["itemNotFound"]["message"] == (
        f"Instance {vm} does not have a port with id {other}")
    with cloud.client("admin", "2.69") as old:
        assert "tag" not in old.get(f"/servers/{vm}/os-interface").json()[
            "interfaceAttachments"][0]
