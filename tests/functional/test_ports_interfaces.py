"""Attaching and detaching ports to a running server (os-interface), with and without QoS.

    host1  br-physnet0 (bw 10000 kbps), ens5 (4 VFs)     the server, booted without ports
    host2  br-physnet0, ens5 (4 VFs)                      elsewhere: never touched

An attach of a QoS port claims its bandwidth (and, for a `direct` port, a VF
of the PF that gives the bandwidth) on the server's host, merged into the
instance's allocation; the port is bound there with `binding:profile.allocation`.
A detach gives exactly that back. A failure at any step leaves the server,
its allocation, the port and the VFs as they were.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from stowage.compute import tables as t
from stowage.compute.conductor import interfaces, ports, tasks
from stowage.compute.rpc import ConductorAPI
from stowage.messaging import MessagingError, RemoteError
from stowage.network import compute_events
from tests.functional import networking as n
from tests.functional.conftest import Cloud
from tests.functional.ports import QOS, QOS_VF, VF, NetHost, Nets, holding, net_host, vf_usage
from tests.functional.servers import (
    assert_invariants,
    boot,
    flavor,
    flavor_amounts,
    image,
    server,
    settle,
)

SMALL = flavor_amounts(1, 512, 5)
FAILED = "Failed to allocate additional resources to instance"


class World:
    def __init__(self, cloud: Cloud) -> None:
        self.cloud = cloud
        self.host1 = net_host(cloud, "host1", vfs=4)
        self.host2 = net_host(cloud, "host2", vfs=4)
        self.nets = Nets(cloud)
        small = flavor(cloud, "small", 1, 512, 5)
        cloud.configure(weigher="pack")
        self.server = boot(cloud, "vm", small, image(cloud))
        assert server(cloud, self.server)["OS-EXT-SRV-ATTR:host"] == "host1"

    @property
    def h(self) -> NetHost:
        return self.host1

    def attach(self, status: int = 200, **attachment: Any) -> dict[str, Any]:
        resp = self.cloud.compute.post(f"/servers/{self.server}/os-interface",
                                       json={"interfaceAttachment": attachment})
        assert resp.status_code == status, resp.text
        settle(self.cloud)
        return dict(resp.json())

    def detach(self, port_id: str, status: int = 202) -> None:
        resp = self.cloud.compute.delete(f"/servers/{self.server}/os-interface/{port_id}")
        assert resp.status_code == status, resp.text
        settle(self.cloud)

    def rows(self) -> list[str | None]:
        with self.cloud.live.cell_db.read() as conn:
            return [r.port_id for r in conn.execute(
                sa.select(t.instance_ports).where(
                    t.instance_ports.c.instance_uuid == self.server)).all()]

    def assert_unchanged(self, port_id: str | None = None, vfs: int = 0) -> None:
        """Only the flavor on host1, the port free, no VF in use, no row."""
        assert holding(self.cloud, self.server) == {self.h.node: SMALL}
        if port_id is not None:
            self.nets.assert_unbound(port_id)
        assert vf_usage(self.cloud, "host1") == {"ens5": vfs}
        assert self.rows() == []
        assert server(self.cloud, self.server)["status"] == "ACTIVE"
        assert_invariants(self.cloud)


@pytest.fixture
def world(cloud: Cloud) -> Iterator[World]:
    made = World(cloud)
    yield made
    made.nets.close()


def test_attach_and_detach_a_qos_port(cloud: Cloud, world: World) -> None:
    port = world.nets.qos_port("a")
    body = world.attach(port_id=port)["interfaceAttachment"]
    assert (body["port_id"], body["net_id"]) == (port, world.nets.net0["id"])
    assert body["fixed_ips"][0]["ip_address"].startswith("10.0.0.")
    assert holding(cloud, world.server) == {world.h.node: SMALL, world.h.bridge: QOS}
    assert holding(cloud, world.host2.node) == {}
    world.nets.assert_bound(port, world.server, "host1", world.h.bridge)
    assert world.rows() == [port]
    listed = cloud.compute.get(f"/servers/{world.server}/os-interface").json()
    assert [a["port_id"] for a in listed["interfaceAttachments"]] == [port]
    assert_invariants(cloud)

    world.detach(port)
    world.assert_unchanged(port)
    actions = cloud.compute.get(f"/servers/{world.server}/os-instance-actions").json()
    assert {"attach_interface", "detach_interface"} <= {
        a["action"] for a in actions["instanceActions"]}


def test_attach_and_detach_a_port_without_resource_request(cloud: Cloud,
                                                           world: World) -> None:
    port = world.nets.qos_port("plain", qos=False)
    world.attach(port_id=port)
    assert holding(cloud, world.server) == {world.h.node: SMALL}
    world.nets.assert_bound(port, world.server, "host1", None)
    assert_invariants(cloud)
    world.detach(port)
    world.assert_unchanged(port)


def test_attach_a_direct_port_takes_a_vf_of_the_pf_with_the_bandwidth(
        cloud: Cloud, world: World) -> None:
    first = world.nets.qos_port("d1", vnic="direct")
    second = world.nets.qos_port("d2", vnic="direct")
    world.attach(port_id=first)
    world.attach(port_id=second)
    assert holding(cloud, world.server) == {
        world.h.node: SMALL, world.h.pf: {k: 2 * v for k, v in QOS_VF.items()}}
    for port in (first, second):
        world.nets.assert_bound(port, world.server, "host1", world.h.pf)
        profile = world.nets.port(port)["binding:profile"]
        assert profile["physical_network"] == "physnet1"
        assert profile["pci_slot"].startswith("0000:81:")
    slots = {world.nets.port(p)["binding:profile"]["pci_slot"] for p in (first, second)}
    assert len(slots) == 2
    assert vf_usage(cloud, "host1") == {"ens5": 2}
    assert vf_usage(cloud, "host2") == {"ens5": 0}
    assert_invariants(cloud)

    world.detach(first)
    assert holding(cloud, world.server) == {world.h.node: SMALL, world.h.pf: QOS_VF}
    world.nets.assert_unbound(first)
    world.nets.assert_bound(second, world.server, "host1", world.h.pf)
    assert vf_usage(cloud, "host1") == {"ens5": 1}
    assert_invariants(cloud)
    world.detach(second)
    world.assert_unchanged(second)


def test_a_port_of_a_server_booted_with_qos_ports_is_detached_alone(cloud: Cloud) -> None:
    from tests.functional.ports import MovingServer
    made = MovingServer(cloud)
    try:
        extra = made.nets.qos_port("c", vnic="direct")
        resp = cloud.compute.post(f"/servers/{made.server}/os-interface",
                                  json={"interfaceAttachment": {"port_id": extra}})
        assert resp.status_code == 200, resp.text
        h = made.hosts["host1"]
        assert holding(cloud, made.server) == {
            h.node: SMALL, h.bridge: QOS, h.pf: {k: 2 * v for k, v in QOS_VF.items()}}
        assert vf_usage(cloud, "host1") == {"ens5": 2}
        resp = cloud.compute.delete(f"/servers/{made.server}/os-interface/{made.direct}")
        assert resp.status_code == 202, resp.text
        settle(cloud)
        assert holding(cloud, made.server) == made.on("host1", SMALL)
        made.nets.assert_unbound(made.direct)
        made.nets.assert_bound(made.normal, made.server, "host1", h.bridge)
        made.nets.assert_bound(extra, made.server, "host1", h.pf)
        assert vf_usage(cloud, "host1") == {"ens5": 1}
        assert_invariants(cloud)
    finally:
        made.nets.close()


def test_deleting_an_attached_port_gives_its_bandwidth_and_vf_back(cloud: Cloud,
                                                                   world: World) -> None:
    """The Network service tells Compute (network-vif-deleted), which detaches the port."""
    normal = world.nets.qos_port("a")
    direct = world.nets.qos_port("d", vnic="direct")
    world.attach(port_id=normal)
    world.attach(port_id=direct)
    assert holding(cloud, world.server) == {world.h.node: SMALL, world.h.bridge: QOS,
                                            world.h.pf: QOS_VF}
    resp = world.nets.client.delete(f"/v2.0/ports/{direct}")
    assert resp.status_code == 204, resp.text
    settle(cloud)
    assert holding(cloud, world.server) == {world.h.node: SMALL, world.h.bridge: QOS}
    assert vf_usage(cloud, "host1") == {"ens5": 0}
    assert world.rows() == [normal]
    listed = cloud.compute.get(f"/servers/{world.server}/os-interface").json()
    assert [a["port_id"] for a in listed["interfaceAttachments"]] == [normal]
    assert_invariants(cloud)

    assert world.nets.client.delete(f"/v2.0/ports/{normal}").status_code == 204
    settle(cloud)
    world.assert_unchanged()


def test_a_network_service_of_another_process_reports_over_http(cloud: Cloud,
                                                                world: World) -> None:
    """`[network] compute_url`: the same event through a real socket to Compute's API."""
    port = world.nets.qos_port("a")
    world.attach(port_id=port)
    notify = compute_events.over_http(f"{cloud.live.url}/compute")
    notify(compute_events.vif_deleted("compute:nova", world.server, port))
    settle(cloud)
    world.assert_unchanged(port)


def test_a_deleted_port_whose_detach_cannot_be_cast_leaves_no_open_operation(
        cloud: Cloud, world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """The event is answered; the journaled detach is ended, the port's row and share kept."""
    port = world.nets.qos_port("a")
    world.attach(port_id=port)

    def unreachable(*args: Any, **kwargs: Any) -> None:
        raise MessagingError("the conductor is unreachable")

    monkeypatch.setattr(ConductorAPI, "detach_interface", unreachable)
    assert world.nets.client.delete(f"/v2.0/ports/{port}").status_code == 204
    settle(cloud)
    assert holding(cloud, world.server) == {world.h.node: SMALL, world.h.bridge: QOS}
    assert world.rows() == [port]
    assert [o for o in tasks.interrupted(cloud.live.db)
            if o.operation == "detach_interface"] == []
    assert server(cloud, world.server)["status"] == "ACTIVE"


def test_deleting_a_port_of_a_server_booted_with_it_detaches_it_alone(cloud: Cloud) -> None:
    from tests.functional.ports import MovingServer
    made = MovingServer(cloud)
    try:
        h = made.hosts["host1"]
        assert made.nets.client.delete(f"/v2.0/ports/{made.normal}").status_code == 204
        settle(cloud)
        assert holding(cloud, made.server) == {h.node: SMALL, h.pf: QOS_VF}
        made.nets.assert_bound(made.direct, made.server, "host1", h.pf)
        assert server(cloud, made.server)["status"] == "ACTIVE"
        assert_invariants(cloud)
    finally:
        made.nets.close()


def test_not_enough_bandwidth_on_the_host_changes_nothing(cloud: Cloud, world: World) -> None:
    big = n.qos_policy(world.nets.client, "big", egress=50_000)
    port = str(n.port(world.nets.client, world.nets.net0["id"], name="big",
                      qos_policy_id=big["id"])["id"])
    resp = cloud.compute.post(f"/servers/{world.server}/os-interface",
                              json={"interfaceAttachment": {"port_id": port}})
    assert resp.status_code == 400, resp.text
    assert FAILED in resp.json()["badRequest"]["message"]
    world.assert_unchanged(port)


def test_a_vf_port_when_the_pf_has_no_vf_left(cloud: Cloud, world: World) -> None:
    ports_ = [world.nets.qos_port(f"d{i}", vnic="direct", qos=False) for i in range(5)]
    for port in ports_[:4]:
        world.attach(port_id=port)
    assert vf_usage(cloud, "host1") == {"ens5": 4}
    before = holding(cloud, world.server)
    assert before[world.h.pf] == {VF: 4}
    resp = cloud.compute.post(f"/servers/{world.server}/os-interface",
                              json={"interfaceAttachment": {"port_id": ports_[4]}})
    assert resp.status_code == 400, resp.text
    assert holding(cloud, world.server) == before
    world.nets.assert_unbound(ports_[4])
    assert vf_usage(cloud, "host1") == {"ens5": 4}
    assert_invariants(cloud)


def _fail_driver(cloud: Cloud, monkeypatch: pytest.MonkeyPatch) -> None:
    cloud.plane.agent("host1").driver.fail("attach_interface")


def _fail_binding(cloud: Cloud, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise RemoteError("PortBindingFailed", "Binding failed for port, please check "
                                               "neutron logs for more information.")
    monkeypatch.setattr(ports, "bind", refuse)


def _fail_claim(cloud: Cloud, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise interfaces.InterfaceAttachResourceAllocationFailed(FAILED + " X")
    monkeypatch.setattr(interfaces, "put_in", refuse)


def _fail_candidates(cloud: Cloud, monkeypatch: pytest.MonkeyPatch) -> None:
    """The host was full by the time the attach looked again (after the API's check)."""
    def refuse(step: Any) -> None:
        raise step.s.resource_error()
    monkeypatch.setattr(interfaces.PickCandidate, "execute", refuse)


def _fail_request(cloud: Cloud, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise RemoteError("NetworkError", "the Network service is down")
    monkeypatch.setattr(ports, "requests_of", refuse)


# (how it fails, status)
FAILURES = [
    pytest.param(_fail_request, 500, id="port_request"),
    pytest.param(_fail_candidates, 400, id="pick_candidate"),
    pytest.param(_fail_claim, 400, id="claim_port"),
    pytest.param(_fail_driver, 500, id="bind_port-driver"),
    pytest.param(_fail_binding, 500, id="bind_port-binding"),
]


@pytest.mark.parametrize("vnic", ["normal", "direct"])
@pytest.mark.parametrize(("fail", "status"), FAILURES)
def test_a_failure_at_every_step_changes_nothing(cloud: Cloud, world: World,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  fail: Any, status: int, vnic: str) -> None:
    port = world.nets.qos_port("a", vnic=vnic)
    fail(cloud, monkeypatch)
    resp = cloud.compute.post(f"/servers/{world.server}/os-interface",
                              json={"interfaceAttachment": {"port_id": port}})
    assert resp.status_code == status, resp.text
    settle(cloud)
    monkeypatch.undo()
    world.assert_unchanged(port)
    # and the port attaches fine afterwards
    world.attach(port_id=port)
    rp = world.h.bridge if vnic == "normal" else world.h.pf
    world.nets.assert_bound(port, world.server, "host1", rp)
    assert vf_usage(cloud, "host1") == {"ens5": 1 if vnic == "direct" else 0}
    assert_invariants(cloud)


def test_a_failed_detach_step_is_done_again_by_recovery(cloud: Cloud, world: World) -> None:
    port = world.nets.qos_port("a", vnic="direct")
    world.attach(port_id=port)
    cloud.plane.agent("host1").driver.fail("detach_interface")
    world.detach(port)
    # The cast failed at the agent: the port is still the server's.
    world.nets.assert_bound(port, world.server, "host1", world.h.pf)
    cloud.plane.conductor.recover()
    settle(cloud)
    world.assert_unchanged(port)


def test_attach_with_net_id_creates_the_port_and_detach_deletes_it(cloud: Cloud,
                                                                     world: World) -> None:
    body = world.attach(net_id=world.nets.net0["id"],
                        fixed_ips=[{"ip_address": "10.0.0.77"}])["interfaceAttachment"]
    port = body["port_id"]
    assert body["fixed_ips"][0]["ip_address"] == "10.0.0.77"
    world.nets.assert_bound(port, world.server, "host1", None)
    assert holding(cloud, world.server) == {world.h.node: SMALL}
    world.detach(port)
    assert world.nets.client.get(f"/v2.0/ports/{port}").status_code == 404
    world.assert_unchanged()


def test_attach_with_net_id_on_a_qos_network_is_refused(cloud: Cloud, world: World) -> None:
    net = n.physnet(world.nets.client, "qnet", "physnet0", vlan=300)
    n.subnet(world.nets.client, net["id"], "10.9.0.0/24")
    resp = world.nets.client.put(f"/v2.0/networks/{net['id']}",
                                 json={"network": {"qos_policy_id": world.nets.qos["id"]}})
    assert resp.status_code == 200, resp.text
    resp = cloud.compute.post(f"/servers/{world.server}/os-interface",
                              json={"interfaceAttachment": {"net_id": net["id"]}})
    assert resp.status_code == 400, resp.text
    assert "Using networks with QoS policy is not supported" in resp.text
    assert world.nets.client.get("/v2.0/ports", params={"device_id": world.server}
                                 ).json()["ports"] == []
    world.assert_unchanged()


def test_refusals(cloud: Cloud, world: World) -> None:
    port = world.nets.qos_port("a")
    url = f"/servers/{world.server}/os-interface"
    missing = "9b3f3b2c-6b8e-4c0c-a9a7-7c1d5ed1d1f1"
    cases = [
        ({"port_id": missing}, 404, f"Port id {missing} could not be found."),
        ({"net_id": missing}, 404, f"Network {missing} could not be found."),
        ({"port_id": port, "net_id": world.nets.net0["id"]}, 400,
         "Must not input both network_id and port_id"),
        ({"port_id": port, "fixed_ips": [{"ip_address": "10.0.0.5"}]}, 400,
         "Must input network_id when request IP address"),
        ({"port_id": "not-a-uuid"}, 400, None),
        ({"bogus": 1}, 400, None),
    ]
    for attachment, status, message in cases:
        resp = cloud.compute.post(url, json={"interfaceAttachment": attachment})
        assert resp.status_code == status, (attachment, resp.text)
        if message:
            assert message in resp.text
    resp = cloud.compute.delete(f"{url}/{port}")
    assert resp.status_code == 404, resp.text
    with cloud.live.cell_db.write() as conn:
        conn.execute(t.instances.update().where(t.instances.c.uuid == world.server)
                     .values(task_state="powering-off"))
    resp = cloud.compute.post(url, json={"interfaceAttachment": {"port_id": port}})
    assert resp.status_code == 409, resp.text
    assert "while it is in task_state powering-off" in resp.text
    with cloud.live.cell_db.write() as conn:
        conn.execute(t.instances.update().where(t.instances.c.uuid == world.server)
                     .values(task_state=None, locked=True))
    member = cloud.client("demo:" + server(cloud, world.server)["tenant_id"],
                          roles=["member", "reader"])
    try:
        resp = member.post(url, json={"interfaceAttachment": {"port_id": port}})
        assert resp.status_code == 409, resp.text
        assert f"Instance {world.server} is locked" in resp.text
    finally:
        member.close()
    world.assert_unchanged(port)


def test_port_in_use(cloud: Cloud, world: World) -> None:
    port = world.nets.qos_port("a")
    world.attach(port_id=port)
    other = boot(cloud, "vm2", flavor(cloud, "tiny", 1, 256, 1), image(cloud, "i2"))
    resp = cloud.compute.post(f"/servers/{other}/os-interface",
                              json={"interfaceAttachment": {"port_id": port}})
    assert resp.status_code == 409, resp.text
    assert f"Port {port} is still in use." in resp.text
    resp = cloud.compute.post(f"/servers/{world.server}/os-interface",
                              json={"interfaceAttachment": {"port_id": port}})
    assert resp.status_code == 409, resp.text
    assert holding(cloud, world.server) == {world.h.node: SMALL, world.h.bridge: QOS}
    assert_invariants(cloud)


def test_two_attaches_of_one_port_at_once(cloud: Cloud, world: World) -> None:
    other = boot(cloud, "vm2", flavor(cloud, "tiny", 1, 256, 1), image(cloud, "i2"))
    port = world.nets.qos_port("a")
    answers: list[int] = []

    def attach(server_id: str) -> None:
        from tests.functional.conftest import api_client
        with api_client(f"{cloud.live.url}/compute/v2.1") as client:
            resp = client.post(f"/servers/{server_id}/os-interface",
                               json={"interfaceAttachment": {"port_id": port}})
            answers.append(resp.status_code)

    threads = [threading.Thread(target=attach, args=(s,)) for s in (world.server, other)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    settle(cloud)
    assert sorted(answers) == [200, 409]
    owner = world.nets.port(port)["device_id"]
    assert owner in (world.server, other)
    held_qos = [s for s in (world.server, other) if any(
        rp == world.h.bridge for rp in holding(cloud, s))]
    assert held_qos == [owner]
    assert_invariants(cloud)


def test_two_attaches_of_different_ports_at_once_both_hold(cloud: Cloud,
                                                           world: World) -> None:
    a, b = world.nets.qos_port("a"), world.nets.qos_port("b")
    answers: list[int] = []

    def attach(port: str) -> None:
        from tests.functional.conftest import api_client
        with api_client(f"{cloud.live.url}/compute/v2.1") as client:
            resp = client.post(f"/servers/{world.server}/os-interface",
                               json={"interfaceAttachment": {"port_id": port}})
            answers.append(resp.status_code)

    threads = [threading.Thread(target=attach, args=(p,)) for p in (a, b)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    settle(cloud)
    assert answers == [200, 200]
    assert holding(cloud, world.server) == {
        world.h.node: SMALL, world.h.bridge: {k: 2 * v for k, v in QOS.items()}}
    assert_invariants(cloud)


class _Crash(BaseException):
    """Stands for kill -9: no undo runs, the journal stays open."""


@pytest.mark.parametrize("vnic", ["normal", "direct"])
@pytest.mark.parametrize("at", ["ClaimPort", "BindPort"])
def test_an_attach_cut_off_is_undone_by_recovery(cloud: Cloud, world: World,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 at: str, vnic: str) -> None:
    from stowage.compute import instance_ports
    from stowage.compute.instance_ports import Requested

    port = world.nets.qos_port("a", vnic=vnic)
    step = getattr(interfaces, at)
    execute = step.execute

    def crash_after(self: Any) -> None:
        execute(self)
        raise _Crash()

    monkeypatch.setattr(step, "execute", crash_after)
    with cloud.live.cell_db.write() as conn:
        row = instance_ports.record_attached(conn, world.server, Requested(port_id=port))
        op = tasks.accept(conn, "attach_interface", world.server, "req-crash", port_row=row)
    with pytest.raises(_Crash):
        cloud.plane.conductor.attach_interface(world.server, row, "req-crash", op)
    assert holding(cloud, world.server) != {world.h.node: SMALL}  # the claim was made
    monkeypatch.undo()
    cloud.plane.conductor.recover()
    settle(cloud)
    world.assert_unchanged(port)
    assert not [o for o in tasks.interrupted(cloud.live.db) if o.operation_uuid == op]
