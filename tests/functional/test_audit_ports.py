"""The audit asks the Network service about servers' ports (audit.py, rule 5).

    host1  br-physnet0      the server "vm", booted with two ports of its user on net0

A port deleted while its server had a task running is not detached (the
`network-vif-deleted` event is dropped then: docs/compatibility.md), so the
server's records still name it; a port bound to a server that does not exist
is a leak of its own. Both are sentences of the audit, when it is given the
Network service; without it the audit sees neither.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from stowage.compute import instances
from stowage.compute.audit import audit
from stowage.network.client import NetworkClient
from stowage.placement.client import PlacementClient
from tests.functional import networking as n
from tests.functional.conftest import Cloud
from tests.functional.ports import Nets, boot, net_host
from tests.functional.servers import flavor, image, new_uuid, settle


@pytest.fixture
def nets(cloud: Cloud) -> Iterator[Nets]:
    net_host(cloud, "host1")
    made = Nets(cloud)
    try:
        yield made
    finally:
        made.close()


def _audit(cloud: Cloud, with_network: bool = True) -> list[str]:
    placement = PlacementClient.over_http(f"{cloud.live.url}/placement")
    network = NetworkClient.over_http(f"{cloud.live.url}/network")
    try:
        return audit(cloud.live.cell_dbs(), placement, network if with_network else None)
    finally:
        placement.close()
        network.close()


def test_a_server_bound_to_a_port_the_network_service_lost(cloud: Cloud, nets: Nets) -> None:
    kept, lost = nets.qos_port("kept", qos=False), nets.qos_port("lost", qos=False)
    sid = boot(cloud, "vm", flavor(cloud, "small", 1, 512, 5), image(cloud),
               [{"port": kept}, {"port": lost}])
    assert _audit(cloud) == []

    with cloud.live.cell_db.write() as conn:  # a task runs: the event will be dropped
        instances.save(conn, sid, task_state="rebooting")
    assert nets.client.delete(f"/v2.0/ports/{lost}").status_code == 204
    settle(cloud)
    with cloud.live.cell_db.write() as conn:
        instances.save(conn, sid, task_state=None)

    assert _audit(cloud) == [f"instance {sid} is bound to port {lost}, which the Network "
                             "service does not have"]
    assert _audit(cloud, with_network=False) == []


def test_a_port_bound_to_a_server_that_does_not_exist(cloud: Cloud, nets: Nets) -> None:
    ghost = new_uuid()
    port = n.port(nets.client, nets.net0["id"], device_id=ghost,
                  device_owner="compute:nova")["id"]
    n.port(nets.client, nets.net0["id"], device_id=new_uuid(), device_owner="network:dhcp")
    assert _audit(cloud) == [f"port {port} is bound to server {ghost}, which does not exist"]
