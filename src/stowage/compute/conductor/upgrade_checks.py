"""The conductor's side of a rolling upgrade: a move of a server whose ports have resource
requests goes only to a compute that can carry them (Nova's `_get_host_supporting_request`).

The scheduler claimed its first choice; while that host's compute service is
older than `upgrade.QOS_MOVE_HOST`, or the compute RPC is pinned below
`upgrade.QOS_MOVE_RPC` (`[upgrade_levels] compute`), its claim is dropped and
the next alternate claimed instead. With none left the caller fails the move
(MaxRetriesExceeded, "Exhausted all hosts available during compute service
level check for instance X.").
"""

from __future__ import annotations

import logging

from stowage.compute import upgrade
from stowage.compute.conductor.common import MoveState

__all__ = ["dest_takes_ports"]

LOG = logging.getLogger(__name__)


def dest_takes_ports(move: MoveState) -> bool:
    """Keep (claim) the first host of the move's selection that can take its ports;
    False when none can (the instance then holds no destination claim)."""
    ops = move.ops
    while True:
        with ops.db.read() as conn:
            fits = upgrade.host_takes_qos_move(conn, move.dest_host,
                                               ops.settings.upgrade_levels_compute)
        if fits:
            return True
        LOG.info("host %s is not new enough for a move with port resource requests, or the "
                 "compute RPC is pinned below 5.2; trying an alternate", move.dest_host)
        alternate = ops.next_alternate(move.instance, move.selections)
        if alternate is None:
            return False
        move.dest = alternate
