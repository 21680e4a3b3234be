"""The scheduler's kept state decides as a brute-force re-read of the whole cloud would.

The scheduler reads only the candidates' nodes and keeps their records
between decisions (`node_reader.NodeRecords`). Here a randomized cloud
changes between decisions the ways a cloud does -- services disabled,
enabled, forced down, silent past service_down_time, heard from again,
deleted; new hosts; hosts joining and leaving zoned aggregates; aggregate
metadata and PCI devices changing -- and after every change the same request
goes to the scheduler under test (one instance, one object for the whole
run) and to a brute-force one that re-reads every service, compute node and
aggregate of the database per decision, as the scheduler did before. Both
get the same Placement answer (some of whose providers are not compute nodes
at all); their selections -- chosen host, alternates, allocation requests,
in order -- and the reasons they turned hosts down must be identical.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import random
import uuid as uuidlib
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
import sqlalchemy as sa

from stowage.compute import aggregates, services
from stowage.compute import tables as t
from stowage.compute.scheduler import NoValidHost, manager
from stowage.compute.scheduler.filters import OPTIONAL_FILTERS
from stowage.compute.scheduler.host_state import HostState, build_host_states, load_nodes
from stowage.compute.scheduler.request import SchedulingRequest, candidate_query
from stowage.config import ComputeSettings
from stowage.db import Database, schema
from stowage.placement.client import Holding
from stowage.timeutil import utcnow
from tests.dbs import migrated_database

SETTINGS = dataclasses.replace(ComputeSettings(), enabled_filters=OPTIONAL_FILTERS)
ZONES = ("az1", "az2")
FLAVOR = {"id": 1, "flavorid": "1", "name": "small", "vcpus": 2, "memory_mb": 2048,
          "root_gb": 10, "ephemeral_gb": 0, "swap": 0, "extra_specs": {}}


@pytest.fixture(params=["sqlite", "postgresql", "mysql"])
def db(request: pytest.FixtureRequest) -> Iterator[Database]:
    with migrated_database(request.param) as url:
        database = Database(url)
        schema.upgrade(database)
        yield database
        database.engine.dispose()


class Answers:
    """Placement for both schedulers: one answer per round, every claim taken."""

    def __init__(self) -> None:
        self.body = b"{}"

    def allocation_candidates_body(self, params: Sequence[tuple[str, str]]) -> bytes:
        return self.body

    def holding(self, consumer: str) -> Holding:
        return Holding()

    def claim(self, *args: Any, **kwargs: Any) -> None:
        return None

    def delete_allocations(self, consumer: str) -> bool:
        return True

    def write_many(self, holdings: Any) -> None:
        return None


class BruteForce(manager.Scheduler):
    """The scheduler as it read the cloud before: every node of the database per decision."""

    def _host_states(self, req: SchedulingRequest) -> list[HostState]:
        with self.api_db.read() as api:
            req.group = manager._group_state(api, req, self._member_dbs())
            metadata = aggregates.metadata_by_host(api)
            member_of = manager._prefilters(api, self.settings, req)
        with self.db.read() as conn:
            nodes = load_nodes(conn, self.settings, utcnow(), metadata)
        in_tree = manager._destination_node(req, nodes)
        query = candidate_query(req, self.settings.max_placement_results, in_tree, member_of)
        candidates = json.loads(self.placement.allocation_candidates_body(query))
        return build_host_states(nodes, candidates)


class Cloud:
    """The randomized cloud: hosts with services and nodes, zoned aggregates."""

    def __init__(self, db: Database, rng: random.Random) -> None:
        self.db, self.rng = db, rng
        self.hosts: list[str] = []
        self.count = 0
        with db.write() as conn:
            self.aggs = [aggregates.create(conn, f"agg-{z}", z) for z in ZONES]
        for _ in range(12):
            self.add_host()

    def node_uuid(self, host: str) -> str:
        return str(uuidlib.uuid5(uuidlib.NAMESPACE_DNS, host))

    def add_host(self) -> None:
        self.count += 1
        host = f"host{self.count:03d}"
        with self.db.write() as conn:
            svc = services.ensure_service(conn, host, services.COMPUTE,
                                          self.rng.choice((None, "az1")))
            services.ensure_compute_node(conn, self.node_uuid(host), host, svc.id, {
                "vcpus": 16, "memory_mb": 32768, "local_gb": 500,
                "cpu_allocation_ratio": 1.0, "ram_allocation_ratio": 1.0,
                "disk_allocation_ratio": 1.0, "pci_stats": self._pci()})
        self.hosts.append(host)

    def _pci(self) -> dict[str, Any]:
        free = self.rng.randrange(0, 3)
        return {"gpu": {"total": 2, "free": free}} if self.rng.random() < 0.5 else {}

    def _service(self, conn: sa.Connection, host: str) -> services.Service | None:
        return services.compute_service(conn, host)

    def change(self) -> str:
        """One random change, as the cloud's other processes would make it."""
        host = self.rng.choice(self.hosts)
        what = self.rng.choice(("disable", "enable", "force_down", "unforce", "silent",
                                "heartbeat", "new_host", "delete", "join", "leave",
                                "metadata", "pci", "zone"))
        with self.db.write() as conn:
            svc = self._service(conn, host)
            if what == "new_host" or svc is None:
                conn.rollback()
                self.add_host()
                return "new_host"
            if what == "disable":
                services.update_service(conn, svc.id, disabled=True,
                                        disabled_reason=self.rng.choice((None, "maint")))
            elif what == "enable":
                services.update_service(conn, svc.id, disabled=False, disabled_reason=None)
            elif what == "force_down":
                services.update_service(conn, svc.id, forced_down=True)
            elif what == "unforce":
                services.update_service(conn, svc.id, forced_down=False)
            elif what == "silent":  # no heartbeat for longer than service_down_time
                old = utcnow() - datetime.timedelta(seconds=2 * SETTINGS.service_down_time)
                conn.execute(t.services.update().where(t.services.c.id == svc.id)
                             .values(last_seen_up=old))
            elif what == "heartbeat":
                services.heartbeat(conn, host, services.COMPUTE)
            elif what == "delete":
                services.delete_service(conn, svc.id)
                self.hosts.remove(host)
            elif what == "pci":
                services.update_compute_node(conn, self.node_uuid(host), pci_stats=self._pci())
            elif what == "zone":
                services.update_service(conn, svc.id,
                                        availability_zone=self.rng.choice((None, "az2")))
            else:
                self._aggregate(conn, what, host)
        return what

    def _aggregate(self, conn: sa.Connection, what: str, host: str) -> None:
        agg = aggregates.get(conn, self.rng.choice(self.aggs).id)
        if what == "join" and host not in agg.hosts:
            aggregates.add_host(conn, agg, host)
        elif what == "leave" and host in agg.hosts:
            aggregates.remove_host(conn, agg, host)
        elif what == "metadata":
            aggregates.set_metadata(conn, agg, {"ssd": self.rng.choice((None, "true", "false"))})

    def answer(self) -> bytes:
        """Candidates among the hosts (and two providers no compute node has)."""
        rng = self.rng
        hosts = rng.sample(self.hosts, k=rng.randrange(1, len(self.hosts) + 1))
        uuids = [self.node_uuid(h) for h in hosts] + [str(uuidlib.uuid4()) for _ in range(2)]
        summaries, requests = {}, []
        for rp in uuids:
            summaries[rp] = {"resources": {
                "VCPU": {"capacity": 16, "used": rng.randrange(0, 15)},
                "MEMORY_MB": {"capacity": 32768, "used": rng.randrange(0, 30000)},
                "DISK_GB": {"capacity": 500, "used": rng.randrange(0, 480)}},
                "traits": ["COMPUTE_NET_ATTACH_INTERFACE"], "parent_provider_uuid": None,
                "root_provider_uuid": rp}
            requests.append({"allocations": {rp: {"resources": {
                "VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 10}}}, "mappings": {"": [rp]}})
        return json.dumps({"allocation_requests": requests,
                           "provider_summaries": summaries}).encode()

    def spec(self, instance: str) -> dict[str, Any]:
        rng = self.rng
        extra: dict[str, str] = {}
        if rng.random() < 0.3:
            extra["pci_passthrough:alias"] = "gpu:1"
        if rng.random() < 0.3:
            extra["aggregate_instance_extra_specs:ssd"] = "true"
        return {"instance_uuid": instance, "project_id": "p1", "user_id": "u1",
                "flavor": {**FLAVOR, "extra_specs": extra}, "is_volume_backed": False,
                "image": None, "availability_zone": rng.choice((None, None, *ZONES)),
                "scheduler_hints": {}, "instance_group": None,
                "ignore_hosts": rng.sample(self.hosts, k=rng.randrange(0, 2)),
                "requested_destination": None, "num_instances": 1, "move": False}


def _decide(sched: manager.Scheduler, spec: dict[str, Any], uuids: list[str]) -> Any:
    try:
        return sched.select_destinations(spec, uuids), [
            sorted(map(str, sched.rejections(u))) for u in uuids]
    except NoValidHost as exc:
        return str(exc), [sorted(map(str, sched.rejections(u))) for u in uuids]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kept_state_decides_as_a_full_reread(db: Database, seed: int) -> None:
    rng = random.Random(seed)
    cloud = Cloud(db, rng)
    placement = Answers()
    kept = manager.Scheduler(SETTINGS, db, placement)
    changes = []
    for _ in range(25):
        changes.append(cloud.change())
        placement.body = cloud.answer()
        uuids = [str(uuidlib.uuid4()) for _ in range(rng.randrange(1, 4))]
        spec = cloud.spec(uuids[0])
        expected = _decide(BruteForce(SETTINGS, db, placement), spec, uuids)
        assert _decide(kept, spec, uuids) == expected, f"after {changes}"
    # The run did change what the scheduler must see.
    assert {"disable", "silent", "new_host"} & set(changes)
