"""The conductor's side of a rolling upgrade: a move of a server whose ports have resource
requests goes only to a compute that can carry them (Nova's `_get_host_supporting_request`).

The scheduler claimed its first choice; while that host's compute service is
older than `upgrade.QOS_MOVE_HOST`, or the compute RPC is pinned below
`upgrade.QOS_MOVE_RPC` (`[upgrade_levels] compute`), its claim is dropped and
the next alternate claimed instead. With none left the caller fails the move
(MaxRetriesExceeded, "Exhausted all hosts available during compute service
level check for instance X."). Evacuate and unshelve check each destination the
same way (`host_taking_ports`).
"""

from __future__ import annotations

import logging
from typing import Any

from stowage.compute import upgrade
from stowage.compute.conductor.common import MoveState, Ops
from stowage.compute.instances import Instance

__all__ = ["dest_takes_ports", "host_taking_ports", "exhausted_message"]

LOG = logging.getLogger(__name__)


def dest_takes_ports(move: MoveState) -> bool:
    """Keep (claim) the first host of the move's selection that can take its ports;
    False when none can (the instance then holds no destination claim)."""
    assert move.dest is not None
    found = host_taking_ports(move.ops, move.instance, move.dest, move.selections)
    if found is None:
        return False
    move.dest = found
    return True


def host_taking_ports(ops: Ops, instance: Instance, dest: dict[str, Any],
                      selections: list[dict[str, Any]]) -> dict[str, Any] | None:
    """`dest` (claimed for the instance) if its host can take a server with resource-
    requesting ports, else the first alternate of `selections` that can, claimed in its
    place (popped as tried); None when none can: the instance then holds no claim."""
    setting = ops.settings.upgrade_levels_compute
    while True:
        host = str(dest["host"])
        with ops.host_db(host).read() as conn:
            fits = upgrade.host_takes_qos_move(conn, host, setting)
        if fits:
            return dest
        LOG.info("host %s is not new enough for a server with port resource requests, or "
                 "the compute RPC is pinned below 5.2; trying an alternate", host)
        alternate = ops.next_alternate(instance, selections)
        if alternate is None:
            return None
        dest = alternate


def exhausted_message(instance_uuid: str) -> str:
    """Nova's MaxRetriesExceeded message when no host passed the service level check."""
    return (f"Exhausted all hosts available during compute service level check for "
            f"instance {instance_uuid}.")
