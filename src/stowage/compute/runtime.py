"""The control plane in one process: transport, conductor, scheduler, agents, periodic work.

`stowage serve` builds one `ControlPlane` beside the Compute API. It owns the
in-process transport, registers the conductor and scheduler endpoints, starts
one compute agent per simulated host, and runs the periodic tasks (agent
heartbeats, resource tracker reconcile, automatic resize confirmation, offload
of servers shelved too long) on a
single timer thread. Tests reach the agents through it to inject faults.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from stowage.compute import rpc, services
from stowage.compute.agent.manager import ComputeAgent
from stowage.compute.conductor.manager import Conductor
from stowage.compute.hosts import HostConfig, load_hosts_file, sim_hosts
from stowage.compute.scheduler.manager import Scheduler
from stowage.config import ComputeSettings
from stowage.db import Database
from stowage.messaging.local import LocalTransport
from stowage.network.client import NetworkClient
from stowage.placement.client import PlacementClient

__all__ = ["ControlPlane"]

LOG = logging.getLogger(__name__)


class ControlPlane:
    """Everything behind the Compute API; `start()` does the I/O, the constructor none."""

    def __init__(self, settings: ComputeSettings, db: Database,
                 placement: PlacementClient, network: NetworkClient | None = None) -> None:
        self.settings = settings
        self.db = db
        self.placement = placement
        # The Network service, for servers with ports (None: none is configured).
        self.network = network
        self.transport = LocalTransport()
        self.conductor_api = rpc.ConductorAPI(self.transport)
        self.scheduler = Scheduler(settings, db, placement)
        self.conductor = Conductor(settings, db, placement, self.transport, network)
        self.agents: dict[str, ComputeAgent] = {}
        # Where the conductor and scheduler services of this process are listed.
        self.controller_host = socket.gethostname()
        self._stop = threading.Event()
        self._timer: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        self.transport.register(rpc.SCHEDULER, self.scheduler)
        self.transport.register(rpc.CONDUCTOR, self.conductor)
        services.register_controller_services(self.db, self.controller_host)
        hosts = {h.name: h for h in sim_hosts(self.settings.sim_hosts,
                                              self.settings.sim_network_devices)}
        if self.settings.hosts_file:
            # A host described in the file wins over the default host of that name.
            hosts.update((h.name, h) for h in load_hosts_file(self.settings.hosts_file))
        for host in hosts.values():
            self.add_host(host)
        # Once the agents are up: recovery asks their hypervisors what really exists.
        self.conductor.start()
        self._timer = threading.Thread(target=self._periodic, name="periodic", daemon=True)
        self._timer.start()

    def add_host(self, host: HostConfig) -> ComputeAgent:
        """Start an agent for `host`: it registers its service, node and provider tree."""
        agent = ComputeAgent(host, self.settings, self.db, self.placement)
        agent.start()
        with self._lock:
            self.agents[host.name] = agent
        # One agent per host name here: a new one replaces, never joins, the old.
        self.transport.unregister(rpc.agent_target(host.name))
        self.transport.register(rpc.agent_target(host.name), agent)
        return agent

    def stop_host(self, name: str) -> None:
        """The agent stops answering (its service will be seen down); its records stay."""
        with self._lock:
            agent = self.agents.pop(name, None)
        self.transport.unregister(rpc.agent_target(name))
        if agent is not None:
            agent.stop()

    def reconfigure(self, settings: ComputeSettings) -> None:
        """New options for the conductor, scheduler and agents started from now on."""
        self.settings = self.conductor.settings = self.scheduler.settings = settings

    def agent(self, name: str) -> ComputeAgent:
        return self.agents[name]

    def drain(self, timeout: float = 60.0) -> bool:
        """Wait until no cast is running; True when the plane is idle."""
        return self.transport.drain(timeout)

    def stop(self) -> None:
        self._stop.set()
        if self._timer is not None:
            self._timer.join(timeout=10)
        for name in list(self.agents):
            self.stop_host(name)
        self.transport.close()

    def _periodic(self) -> None:
        """Run each job when its period has passed since it last ran (or since the start).

        Periods are read from the current settings on every tick, so that
        `reconfigure` (tests, or a changed option) takes effect at once.
        """
        last: dict[int, float] = {}
        started = time.monotonic()
        while not self._stop.wait(0.5):
            now = time.monotonic()
            for i, (period, job) in enumerate(self._jobs()):
                if now - last.get(i, started) >= period:
                    last[i] = now
                    _guarded(job)

    def _jobs(self) -> list[tuple[float, Callable[[], None]]]:
        s = self.settings
        return [
            (s.report_interval, self._heartbeats),
            (s.conductor_lease_seconds / 3, self.conductor.take_over_expired),
            (s.update_resources_interval, self._update_resources),
            (max(s.resize_confirm_window / 4, 1.0), self.conductor.confirm_expired_resizes),
            (s.shelved_poll_interval if s.shelved_poll_interval > 0 else float("inf"),
             self.conductor.offload_shelved),
            (s.reclaim_instance_interval if s.reclaim_instance_interval > 0 else float("inf"),
             self.conductor.reclaim_soft_deleted),
        ]

    def _heartbeats(self) -> None:
        with self.db.write() as conn:
            for binary in (services.CONDUCTOR, services.SCHEDULER):
                services.heartbeat(conn, self.controller_host, binary)
        for agent in list(self.agents.values()):
            _guarded(agent.heartbeat)

    def _update_resources(self) -> None:
        for agent in list(self.agents.values()):
            _guarded(agent.update_available_resource)


def _guarded(job: Callable[[], Any]) -> None:
    try:
        job()
    except Exception:
        LOG.exception("periodic task %s failed", getattr(job, "__qualname__", job))
