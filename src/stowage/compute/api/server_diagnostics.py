"""GET /servers/{id}/diagnostics: what the hypervisor says of a running guest (admin).

Before 2.48 the answer is the driver's own flat dict (the simulated driver
answers libvirt's keys: cpuN_time, memory in KiB, vdX_read..., tapX_rx...);
from 2.48 Nova's standard form:

    state, driver, hypervisor, hypervisor_os, uptime, config_drive,
    num_cpus, num_nics, num_disks, memory_details {maximum, used},
    cpu_details [{id, time, utilisation}], nic_details [{mac_address, rx_*, tx_*}],
    disk_details [{read_bytes, read_requests, write_bytes, write_requests, errors_count}]

Both come from the guest on the server's host (agent `get_instance_diagnostics`).
A server without a host is 409 "Instance X is not ready", a host that is
down 409, and a guest that is not running 409 "Cannot 'get_diagnostics'
instance X while it is in power state shutdown" (Nova's InstanceInvalidState).
"""

from __future__ import annotations

from stowage.compute.api.common import API_PREFIX, at_least
from stowage.compute.api.server_guest import agent_call, guest_server
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES"]

STANDARD = 48  # the standard diagnostics form
# The agent's refusals: a guest not running (its own words), or gone meanwhile.
_REFUSALS: dict[str, tuple[int, str | None]] = {
    "InstanceInvalidState": (409, None),
    "GuestNotFound": (409, "Instance is not running")}


def show_diagnostics(req: Request) -> Response:
    instance = guest_server(req, "os_compute_api:os-server-diagnostics")
    standard = at_least(req, STANDARD)
    found = agent_call(req, instance, "get_instance_diagnostics",
                       _REFUSALS, standard=standard)
    if standard:
        found["config_drive"] = bool(instance.config_drive)
    return json_response(found)


ROUTES = [Route("GET", API_PREFIX + "/servers/{server_id}/diagnostics", show_diagnostics)]
