"""Runs inside `.venv-nova`: Nova 34.0.0's scheduler deciding over bench/scheduler.py's cloud.

    .venv-nova/bin/python bench/scheduler_nova.py --cloud FILE --answer FILE
        --repeats N --out FILE

Only Nova and its test fixtures are imported here; the project's code never
runs in this interpreter. Nova's own `nova.test.TestCase` gives the
databases (API, cell0, cell1; in-memory SQLite) and configuration, as Nova's
functional tests have them. In cell1 each host of `--cloud` becomes a
nova-compute `Service` and a `ComputeNode` with the same uuid, capacity,
usage, disabled and forced-down flags stowage's database gets.

`SchedulerManager.select_destinations` then runs as the conductor calls it
(return_objects and return_alternates), with the default filters and all
weighers. Its report client is a double: `get_allocation_candidates` turns the
request into its query string and parses `--answer` with `json` as the real
client's `resp.json()` does, and `claim_resources` takes every claim. The
notifier is a no-op, as with notifications off (Nova still builds the
payloads it would send), and logging is at INFO, as with debug = False: Nova's
test fixture would otherwise format every DEBUG message. CPU is
`time.process_time()` around each decision, after two warm-up ones; the
JSON result holds the samples, their median, the time in the host manager's
three stages, and the last selection.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
import unittest
import uuid as uuidlib
from collections import defaultdict
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from nova.db.api import api as api_db
from nova.db.main import api as main_db
from nova.scheduler import manager as scheduler_manager

from nova import context, objects, test

ARGS: argparse.Namespace | None = None
FLAVOR = {"vcpus": 1, "memory_mb": 512, "root_gb": 1}


class _Quiet:
    """A notifier with notifications off."""

    def info(self, *args: Any, **kwargs: Any) -> None:
        return None

    def is_enabled(self) -> bool:
        return False


class _AnswerClient:
    """The report client as the scheduler uses it: candidates from the bench's bytes."""

    def __init__(self, body: bytes, spent: dict[str, float]) -> None:
        self.body = body
        self.spent = spent

    def get_allocation_candidates(self, ctx: Any, resources: Any) -> tuple[Any, Any, str]:
        resources.to_querystring()
        start = time.process_time()
        data = json.loads(self.body)
        self.spent["parse"] += time.process_time() - start
        return data["allocation_requests"], data["provider_summaries"], "1.36"

    def claim_resources(self, *args: Any, **kwargs: Any) -> bool:
        return True


def _timed(spent: dict[str, float], name: str, fn: Any) -> Any:
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            result = fn(*args, **kwargs)
            return list(result) if name == "host states" else result
        finally:
            spent[name] += time.process_time() - start
    return wrapped


class SchedulerBench(test.TestCase):
    def _populate(self, hosts: list[dict[str, Any]]) -> None:
        """The first host through Nova's objects; the others as copies of its rows with
        their own values, in bulk (objects would take minutes at 10,000 hosts)."""
        ctxt = context.get_admin_context()
        cell = self.cell_mappings["cell1"]
        with context.target_cell(ctxt, cell) as cctxt:
            first = self._create(cctxt, hosts[0])
            engine = main_db.get_engine(context=cctxt)
            self._clone(engine, "services", first[0], [
                {"id": first[0] + i, "uuid": str(uuidlib.uuid4()), "host": h["host"],
                 "disabled": h["disabled"],
                 "disabled_reason": "bench" if h["disabled"] else None,
                 "forced_down": h["forced_down"]} for i, h in enumerate(hosts) if i])
            self._clone(engine, "compute_nodes", first[1], [
                {"id": first[1] + i, "uuid": h["uuid"], "host": h["host"],
                 "hypervisor_hostname": h["host"], "service_id": first[0] + i,
                 **self._usage(h)} for i, h in enumerate(hosts) if i])
        self._clone(api_db.get_engine(), "host_mappings", first[2], [
            {"id": first[2] + i, "host": h["host"]} for i, h in enumerate(hosts) if i])

    @staticmethod
    def _usage(h: dict[str, Any]) -> dict[str, Any]:
        used = h["used"]
        return {"vcpus": h["vcpus"], "memory_mb": h["memory_mb"], "local_gb": h["local_gb"],
                "vcpus_used": used["VCPU"], "memory_mb_used": used["MEMORY_MB"],
                "local_gb_used": used["DISK_GB"],
                "free_ram_mb": h["memory_mb"] - used["MEMORY_MB"],
                "free_disk_gb": h["local_gb"] - used["DISK_GB"]}

    def _create(self, cctxt: Any, h: dict[str, Any]) -> tuple[int, int, int]:
        svc = objects.Service(cctxt, host=h["host"], binary="nova-compute", topic="compute",
                              disabled=h["disabled"],
                              disabled_reason="bench" if h["disabled"] else None,
                              forced_down=h["forced_down"])
        svc.create()
        node = objects.ComputeNode(
            cctxt, uuid=h["uuid"], host=h["host"], hypervisor_hostname=h["host"],
            service_id=svc.id, disk_available_least=0, hypervisor_type="fake",
            hypervisor_version=1000, cpu_info="{}", running_vms=0, current_workload=0,
            host_ip="127.0.0.1", supported_hv_specs=[], stats={}, numa_topology=None,
            cpu_allocation_ratio=16.0, ram_allocation_ratio=1.5, disk_allocation_ratio=1.0,
            **self._usage(h))
        node.create()
        mapping = objects.HostMapping(context.get_admin_context(), host=h["host"],
                                      cell_mapping=self.cell_mappings["cell1"])
        mapping.create()
        return svc.id, node.id, mapping.id

    @staticmethod
    def _clone(engine: Any, table_name: str, row_id: int, changes: list[dict[str, Any]]
               ) -> None:
        table = sa.Table(table_name, sa.MetaData(), autoload_with=engine)
        with engine.begin() as conn:
            model = dict(conn.execute(sa.select(table).where(table.c.id == row_id)).one()
                         ._mapping)
            if changes:
                conn.execute(table.insert(), [{**model, **c} for c in changes])

    def _spec(self, ctxt: Any, instance: str) -> Any:
        flavor = objects.Flavor(id=1, flavorid="1", name="m1.small", ephemeral_gb=0, swap=0,
                                rxtx_factor=1.0, vcpu_weight=0, disabled=False,
                                is_public=True, extra_specs={}, **FLAVOR)
        image = objects.ImageMeta.from_dict({"properties": {}})
        return objects.RequestSpec.from_components(
            ctxt, instance, image, flavor, None, objects.InstancePCIRequests(requests=[]),
            {}, None, None, project_id="bench-project", user_id="bench-user")

    def test_decisions(self) -> None:
        assert ARGS is not None
        self.flags(notification_format="unversioned", group="notifications")
        # Populating 10,000 hosts takes longer than service_down_time on a busy
        # machine; no heartbeat runs here, so the hosts would go down mid-run.
        self.flags(service_down_time=86400)
        # Nova's test fixture formats every DEBUG message (to catch bad format
        # strings); a deployment with debug = False (the default) logs from INFO.
        logging.getLogger().setLevel(logging.INFO)
        hosts = json.loads(Path(ARGS.cloud).read_text())
        self._populate(hosts)
        spent: dict[str, float] = defaultdict(float)
        client = _AnswerClient(Path(ARGS.answer).read_bytes(), spent)
        self.stub_out("nova.scheduler.client.report.report_client_singleton", lambda: client)
        sched = scheduler_manager.SchedulerManager()
        sched.notifier = _Quiet()
        hm = sched.host_manager
        hm.get_host_states_by_uuids = _timed(spent, "host states", hm.get_host_states_by_uuids)
        hm.get_filtered_hosts = _timed(spent, "filters", hm.get_filtered_hosts)
        hm.get_weighed_hosts = _timed(spent, "weighers", hm.get_weighed_hosts)
        ctxt = context.get_admin_context()
        samples, parts = [], []
        for i in range(ARGS.repeats + 2):
            instance = str(uuidlib.uuid4())
            spec = self._spec(ctxt, instance)
            spent.clear()
            start = time.process_time()
            selections = sched.select_destinations(ctxt, spec_obj=spec,
                                                   instance_uuids=[instance],
                                                   return_objects=True, return_alternates=True)
            elapsed = time.process_time() - start
            if i >= 2:
                samples.append(elapsed * 1000)
                parts.append({k: v * 1000 for k, v in spent.items()})
        chosen = [s.service_host for s in selections[0]]
        names = sorted({k for p in parts for k in p})
        result = {"median_ms": statistics.median(samples), "samples": samples,
                  "chosen": chosen,
                  "breakdown": {k: statistics.median(p.get(k, 0.0) for p in parts)
                                for k in names}}
        with open(ARGS.out, "w") as out:
            json.dump(result, out)


def main() -> int:
    global ARGS
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cloud", required=True)
    p.add_argument("--answer", required=True)
    p.add_argument("--repeats", type=int, default=15)
    p.add_argument("--out", required=True)
    ARGS = p.parse_args()
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(SchedulerBench)
    outcome = unittest.TextTestRunner(stream=sys.stderr, verbosity=1).run(suite)
    return 0 if outcome.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
