"""Each operation journals exactly the steps its module lists, which the crash tests
enumerate: a step added without being listed would escape them.

    host1, host2, host3: vm (small <-> large), resized, reverted, confirmed, stopped, started,
    soft rebooted, stopped and hard rebooted, paused + unpaused, suspended + resumed, rebuilt,
    live-migrated, powered off and on by power-update events, shelved + unshelved in place,
    shelved + offloaded + unshelved, shelved and offloaded at once + unshelved,
    evacuated off its forced-down host, soft deleted + restored,
    resized again and deleted
"""

from __future__ import annotations

import sqlalchemy as sa

from stowage.compute import tables as t
from tests.functional.conftest import Cloud
from tests.functional.servers import (
    action,
    boot,
    flavor,
    force_down,
    host_of,
    image,
    server,
    settle,
)
from tests.functional.test_crash_recovery import OPERATIONS


def test_each_operation_journals_exactly_its_listed_steps(cloud: Cloud) -> None:
    for host in ("host1", "host2", "host3"):
        cloud.add_host(host, vcpus=8, memory_mb=4096, disk_gb=100)
    small, large = flavor(cloud, "small", 1, 512, 5), flavor(cloud, "large", 2, 1024, 10)
    image_id = image(cloud)
    vm = boot(cloud, "vm", small, image_id)
    for body in ({"resize": {"flavorRef": large}}, {"revertResize": None},
                 {"migrate": None}, {"confirmResize": None}, {"os-stop": None},
                 {"os-start": None}, {"reboot": {"type": "SOFT"}}, {"os-stop": None},
                 {"reboot": {"type": "HARD"}}, {"pause": None}, {"unpause": None},
                 {"suspend": None}, {"resume": None}, {"rebuild": {"imageRef": image_id}},
                 {"os-migrateLive": {"host": None, "block_migration": "auto"}}):
        action(cloud, vm, body, status=204 if "confirmResize" in body else 202)
    action(cloud, vm, {"rescue": None}, status=200)
    for body in ({"unrescue": None}, {"createImage": {"name": "vm-snap"}}):
        action(cloud, vm, body)
    for tag in ("POWER_OFF", "POWER_ON"):  # the power-update external event, both ways
        resp = cloud.compute.post("/os-server-external-events", json={"events": [
            {"name": "power-update", "server_uuid": vm, "tag": tag}]},
            headers={"openstack-api-version": "compute 2.76"})
        assert resp.status_code == 200, resp.text
        settle(cloud)
    cloud.configure(shelved_offload_time=-1)  # shelve keeps the host until told
    for body in ({"shelve": None}, {"unshelve": None}, {"shelve": None},
                 {"shelveOffload": None}, {"unshelve": None}):
        action(cloud, vm, body)
    cloud.configure(shelved_offload_time=0)  # shelve offloads at once
    for body in ({"shelve": None}, {"unshelve": None}):
        action(cloud, vm, body)
    assert server(cloud, vm)["status"] == "ACTIVE"
    force_down(cloud, host_of(cloud, vm))
    action(cloud, vm, {"evacuate": {}}, status=200)
    cloud.configure(reclaim_instance_interval=3600)  # soft deleted, restored
    assert cloud.compute.delete(f"/servers/{vm}").status_code == 204
    settle(cloud)
    action(cloud, vm, {"restore": None})
    cloud.configure(reclaim_instance_interval=0)
    action(cloud, vm, {"resize": {"flavorRef": large}})
    assert server(cloud, vm)["status"] == "VERIFY_RESIZE"
    assert cloud.compute.delete(f"/servers/{vm}").status_code == 204
    settle(cloud)
    j = t.operation_steps
    with cloud.live.cell_db.read() as conn:
        rows = conn.execute(sa.select(j.c.operation, j.c.step, j.c.state)).all()
    journaled: dict[str, set[str]] = {}
    for row in rows:
        journaled.setdefault(row.operation, set()).add(row.step)
        assert row.state in ("done", "executing") or row.step == "end", row
    assert set(journaled) == set(OPERATIONS)
    for operation, steps in journaled.items():
        assert steps == {"accepted", "end", *OPERATIONS[operation]}, operation
