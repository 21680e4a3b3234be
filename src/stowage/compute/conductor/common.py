"""What every conductor operation works with: records, Placement, agents, scheduler.

`Ops` bundles the dependencies and the request id of the operation so that
steps stay small; `event()` records an instance action event around a step,
so `openstack server event show` tells the operator which step failed where.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from stowage.compute import actions, instances, states
from stowage.compute.conductor.tasks import CrashHook, Journal
from stowage.compute.instances import Instance
from stowage.compute.rpc import AgentAPI, SchedulerAPI
from stowage.config import ComputeSettings
from stowage.db import Database
from stowage.messaging import MessagingError, RemoteError
from stowage.placement.client import Holding, PlacementClient

__all__ = ["Ops", "short_reason"]

LOG = logging.getLogger(__name__)


@dataclass
class Ops:
    settings: ComputeSettings
    db: Database
    placement: PlacementClient
    agents: AgentAPI
    scheduler: SchedulerAPI
    request_id: str
    # Crash tests only (`[compute] crash_at`): ends the process at a journal point.
    hook: CrashHook | None = None

    def journal(self, operation: str, instance_uuid: str | None,
                uuid: str | None = None) -> Journal:
        """The journal of `operation` (`uuid`: the one the API accepted, if any)."""
        return Journal(self.db, operation, instance_uuid, uuid, self.hook)

    def instance(self, uuid: str) -> Instance:
        with self.db.read() as conn:
            return instances.get(conn, uuid)

    def instance_any(self, uuid: str) -> Instance:
        """The instance even if it was deleted meanwhile (recovery checks `deleted`)."""
        with self.db.read() as conn:
            return instances.get(conn, uuid, read_deleted=True)

    def update(self, uuid: str, **values: Any) -> Instance:
        with self.db.write() as conn:
            return instances.update(conn, uuid, **values)

    def fault(self, uuid: str, exc: BaseException, host: str | None, code: int = 500) -> None:
        with self.db.write() as conn:
            instances.add_fault(conn, uuid, code, short_reason(exc), details=str(exc),
                                host=host)

    @contextmanager
    def event(self, instance_uuid: str, name: str, host: str | None = None) -> Iterator[None]:
        with self.db.write() as conn:
            actions.start_event(conn, instance_uuid, self.request_id, name, host)
        try:
            yield
        except Exception as exc:
            with self.db.write() as conn:
                actions.finish_event(conn, instance_uuid, self.request_id, name,
                                     error=short_reason(exc))
            raise
        with self.db.write() as conn:
            actions.finish_event(conn, instance_uuid, self.request_id, name)

    def finish_action(self, instance_uuid: str, message: str | None = None) -> None:
        with self.db.write() as conn:
            actions.finish_action(conn, instance_uuid, self.request_id, message)

    def call_agent(self, host: str, method: str, **kwargs: Any) -> Any:
        return self.agents.call(host, method, **kwargs)

    def guest_power(self, host: str | None, instance_uuid: str) -> int:
        """What `host`'s hypervisor says of the guest now; NOSTATE when none or unreachable.

        Recovery settles on this, so only a guest that answers counts as intact.
        """
        if not host:
            return states.NOSTATE
        try:
            return int(self.call_agent(host, "guest_power_state", instance_uuid=instance_uuid))
        except MessagingError as exc:
            LOG.warning("cannot ask %s about the guest of %s: %s", host, instance_uuid, exc)
            return states.NOSTATE

    def terminate_quietly(self, host: str, instance_uuid: str) -> None:
        """Destroy whatever `host` holds of the instance; a failure is only logged."""
        try:
            self.call_agent(host, "terminate_instance", instance_uuid=instance_uuid)
        except MessagingError as exc:
            LOG.warning("could not destroy the guest of %s on %s: %s", instance_uuid, host, exc)

    def claim_alternate(self, inst: Instance, alternate: Mapping[str, Any]) -> bool:
        """Claim an alternate the scheduler kept unclaimed; False when it is taken by now."""
        allocs = {rp: a["resources"]
                  for rp, a in alternate["allocation_request"]["allocations"].items()}
        try:
            self.placement.claim(inst.uuid, allocs, inst.project_id, inst.user_id, None)
        except Exception as exc:  # noqa: BLE001 - taken, or unreachable: try the next one
            LOG.info("alternate %s for %s could not be claimed: %s", alternate["host"],
                     inst.uuid, exc)
            return False
        return True

    def hand_over(self, source: str, target: str, target_type: str, project_id: str,
                  user_id: str) -> None:
        """Atomically give everything `source` holds to `target`, which loses what it held.

        One `POST /allocations` for both consumers, each at the generation just
        read: instance -> migration before a move, migration -> instance on a
        revert or a rollback. A concurrent writer makes it fail with a conflict
        and change nothing.
        """
        held = self.placement.holding(source)
        before = self.placement.holding(target)
        self.placement.write_many({
            target: Holding(held.allocations, before.generation, project_id, user_id,
                            target_type),
            source: Holding({}, held.generation, project_id, user_id,
                            held.consumer_type or "INSTANCE"),
        })


def short_reason(exc: BaseException) -> str:
    """A one-line reason for faults and events: a remote failure's own message, as Nova shows."""
    if isinstance(exc, RemoteError):
        return exc.message[:255]
    if isinstance(exc, MessagingError):
        return str(exc)[:255]
    return f"{type(exc).__name__}: {exc}"[:255]
