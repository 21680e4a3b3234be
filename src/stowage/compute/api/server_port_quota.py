"""POST /servers: the project's port quota, checked before anything is written.

Nova's `validate_networks` asks Neutron for the project's `port` limit and
counts the project's ports; the servers that still fit decide the request:

    ports needed per server = the `{"uuid": net}` entries (and the default
                              network's one); a `{"port": P}` needs none
    limit -1 (or no quota API)  -> every server fits
    used > limit                -> 403 "The number of defined ports: U is over the limit: L"
    free // needed < min_count  -> 403 "Maximum number of ports exceeded"
    free // needed < max_count  -> max_count lowered to what fits (logged)

The answers are Nova's (`PortLimitExceeded`, a 403 from the servers API). As
in Nova the check is advisory: ports are created later, by the conductor,
and a create the Network service refuses then (409 OverQuota, the room taken
meanwhile) fails that server's build instead (ERROR with a fault, its claim
dropped, the ports made for it deleted).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from stowage.compute.instance_ports import Requested
from stowage.web.errors import HTTPError
from stowage.web.http import Request

__all__ = ["servers_that_fit", "PORT_LIMIT_EXCEEDED"]

LOG = logging.getLogger(__name__)
PORT_LIMIT_EXCEEDED = "Maximum number of ports exceeded"


def servers_that_fit(req: Request, requested: Sequence[Requested], min_count: int,
                     max_count: int) -> int:
    """How many of max_count servers the port quota leaves room for; 403 below min_count."""
    needed = sum(1 for entry in requested if entry.port_id is None)
    plane = req.app.plane
    network = None if plane is None else plane.network
    project_id = req.context.project_id
    if not needed or network is None or project_id is None:
        return max_count
    quota = network.show_quota(project_id)
    limit = -1 if quota is None else int(quota.get("port", -1))
    if limit == -1:
        return max_count
    used = len(network.list_ports(project_id=project_id, fields="id"))
    free = limit - used
    if free < 0:
        raise HTTPError(403, f"The number of defined ports: {used} is over the limit: {limit}")
    fits = min(max_count, free // needed)
    if fits < min_count:
        raise HTTPError(403, PORT_LIMIT_EXCEEDED)
    if fits < max_count:
        LOG.info("max count reduced from %d to %d due to network port quota", max_count, fits)
    return fits
