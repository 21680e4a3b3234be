"""The control plane: transport, conductor, scheduler, agents and their periodic work.

`stowage serve` builds one `ControlPlane` beside the Compute API; `stowage
conductor`, `stowage scheduler` and `stowage agent` build one each with a
single *role* (compute/worker.py runs them). What each role adds::

    role        registers on the transport     periodic jobs (one timer thread)
    (API)       nothing: casts and calls only  none
    conductor   `conductor`                    conductor heartbeat, automatic resize
                                               confirmation, offload of servers shelved
                                               too long, reclaim of soft-deleted ones;
                                               crash recovery once at start
    scheduler   `scheduler`                    scheduler heartbeat
    compute     `compute.<host>` per host      each agent's heartbeat and resource
                                               tracker (update_available_resource)

By default a plane has every role on the in-process transport: one process
does it all, as before the split. Tests reach the agents through it to
inject faults.
"""

from __future__ import annotations

import functools
import logging
import socket
import threading
import time
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from stowage.compute import cells as cell_records
from stowage.compute import rpc, services, unbuilt
from stowage.compute.agent.manager import ComputeAgent
from stowage.compute.cells import Cells
from stowage.compute.conductor import tasks
from stowage.compute.conductor.manager import Conductor
from stowage.compute.hosts import SIM_BRIDGE, HostConfig, load_hosts_file, sim_hosts
from stowage.compute.reachable import until_reachable
from stowage.compute.scheduler.manager import Scheduler
from stowage.config import ComputeSettings, Settings
from stowage.db import Database
from stowage.db.engine import sides
from stowage.errors import NotFound
from stowage.messaging import Transport
from stowage.messaging.local import LocalTransport
from stowage.network.client import NetworkClient
from stowage.placement.client import PlacementClient

__all__ = ["ControlPlane", "CONDUCTOR_ROLE", "SCHEDULER_ROLE", "COMPUTE_ROLE", "ALL_ROLES"]

LOG = logging.getLogger(__name__)

CONDUCTOR_ROLE = "conductor"
SCHEDULER_ROLE = "scheduler"
COMPUTE_ROLE = "compute"
ALL_ROLES = frozenset({CONDUCTOR_ROLE, SCHEDULER_ROLE, COMPUTE_ROLE})
# How often drain() looks at the journal when the conductor runs in other processes.
_JOURNAL_POLL = 0.2
# Hosts whose heartbeats share one UPDATE (a bounded IN list for every database).
_HEARTBEAT_CHUNK = 500
# Hosts whose resource tracker runs at once in one process.
_TRACKER_THREADS = 8


class ControlPlane:
    """Everything behind the Compute API; `start()` does the I/O, the constructor none.

    `transport` defaults to a new in-process one; `roles` (default all) says
    what runs here; `host_names` adds default simulated hosts by name to
    those of the settings (`sim_hosts`, `hosts_file`), for the compute role.
    """

    def __init__(self, settings: ComputeSettings, db: Database,
                 placement: PlacementClient, network: NetworkClient | None = None, *,
                 transport: Transport | None = None, roles: Collection[str] = ALL_ROLES,
                 host_names: Sequence[str] = (), cell_db: Database | None = None,
                 cells: Cells | None = None, image_settings: Settings | None = None) -> None:
        unknown = set(roles) - ALL_ROLES
        if unknown:
            raise ValueError(f"unknown control plane role(s) {sorted(unknown)}")
        self.settings = settings
        # The whole deployment's settings, for the image store snapshots are written to
        # (image/data.py); None: snapshots record their size only (unit tests).
        self.image_settings = image_settings
        # The API database and the cell's (`db` itself when one database holds both):
        # compute/cells.py.
        self.api_db, self.db = sides(db, cell_db)
        # The deployment's cells (None: `db` is the only database, as in unit tests):
        # each host this plane starts is mapped to the cell it runs in.
        self.cells = cells
        self.placement = placement
        # The Network service, for servers with ports (None: none is configured).
        self.network = network
        self.transport: Transport = transport if transport is not None else LocalTransport()
        self.roles = frozenset(roles)
        self.host_names = tuple(host_names)
        self.conductor_api = rpc.ConductorAPI(self.transport)
        self.scheduler = (Scheduler(settings, db, placement, cell_db=self.db, cells=cells)
                          if SCHEDULER_ROLE in self.roles else None)
        # The default cell's conductor; each other cell database gets one of its own when
        # the plane starts (or a cast first names it): `conductors`, keyed by database.
        self.conductor = (Conductor(settings, db, placement, self.transport, network,
                                    cell_db=self.db, cells=cells,
                                    image_settings=image_settings)
                          if CONDUCTOR_ROLE in self.roles else None)
        self.conductors: dict[str, Conductor] = (
            {} if self.conductor is None else {_key(self.db): self.conductor})
        # API records of builds a crash cut off between their two commits (unbuilt.py):
        # one sweeper per process, for every cell.
        self.unbuilt = unbuilt.Sweeper(cells)
        self.agents: dict[str, ComputeAgent] = {}
        # Where the conductor and scheduler services of this process are listed.
        self.controller_host = socket.gethostname()
        self._stop = threading.Event()
        # Set when faults killed every agent of an agent process (`kill_host`).
        self.killed = threading.Event()
        self._timer: threading.Thread | None = None
        self._beater: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Serve, beat, then bring the hosts up one by one (stoppable between two hosts).

        Heartbeats get their own thread and start before the hosts: an agent of
        thousands of hosts takes minutes to register them, and a host that
        registered first must not be seen down meanwhile (nor behind a long
        resource-tracker round on the timer thread). A host whose start cannot
        reach Placement is tried again with back-off (`reachable`), as
        nova-compute waits for the API rather than exiting.
        """
        if self.scheduler is not None:
            self.transport.register(rpc.SCHEDULER, self.scheduler)
        if self.conductor is not None:
            for _, cell_db in [] if self.cells is None else self.cells.distinct():
                self.conductor_for(cell_db, recover=False)
            self.transport.register(rpc.CONDUCTOR, self.conductor if self.cells is None
                                    else CellRouter(self))
        if self._controller_binaries():
            services.register_controller_services(self.db, self.controller_host,
                                                  self._controller_binaries())
        if self.roles:
            self._beater = self._thread("heartbeats", self._beat)
        if COMPUTE_ROLE in self.roles:
            for host in self.configured_hosts():
                # Placement may not answer yet (the API starts later): tried again.
                if until_reachable(functools.partial(self.add_host, host),
                                   f"host {host.name}: start", self._stop) is None:
                    return
        if self.conductor is not None and not self._stop.is_set():
            # Once the agents are up: recovery asks their hypervisors what really exists.
            for conductor in list(self.conductors.values()):
                conductor.start()
            _guarded(self._sweep_unbuilt)
        if self.roles and not self._stop.is_set():
            self._timer = self._thread("periodic", self._periodic)

    def conductor_for(self, cell_db: Database, recover: bool = True) -> Conductor:
        """The conductor of a cell database, made when first needed (a cell created while
        the plane runs: it recovers that database's leftovers first)."""
        with self._lock:
            found = self.conductors.get(_key(cell_db))
            if found is None:
                found = Conductor(self.settings, self.api_db, self.placement, self.transport,
                                  self.network, cell_db=cell_db, cells=self.cells,
                                  image_settings=self.image_settings)
                self.conductors[_key(cell_db)] = found
            else:
                recover = False
        if recover:
            found.start()
        return found

    def cell_db_of_host(self, host: HostConfig) -> Database:
        """The database of the host's cell (mapping the host to it)."""
        if self.cells is None:
            return self.db
        try:
            cell = self.cells.by_name(host.cell) if host.cell else self.cells.default()
        except NotFound:
            raise ValueError(f"host {host.name} names cell {host.cell!r}, which does not "
                             "exist: create it with `stowage manage cell create`") from None
        if cell.name == cell_records.CELL0:
            raise ValueError(f"host {host.name}: cell0 keeps servers no host took; "
                             "it has no hosts")
        with self.api_db.write() as conn:
            cell_records.map_host(conn, host.name, cell)
        return self.cells.database(cell)

    def request_stop(self) -> None:
        """Ask a `start()` in progress to add no more hosts (a signal handler may call it)."""
        self._stop.set()

    def _thread(self, name: str, target: Callable[[], None]) -> threading.Thread:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        return thread

    def configured_hosts(self) -> list[HostConfig]:
        """The simulated hosts this plane runs: `sim_hosts`, the hosts file, `host_names`."""
        s = self.settings
        hosts = {h.name: h for h in sim_hosts(s.sim_hosts, s.sim_network_devices)}
        if s.hosts_file:
            # A host described in the file wins over the default host of that name.
            hosts.update((h.name, h) for h in load_hosts_file(s.hosts_file))
        devices = (SIM_BRIDGE,) if s.sim_network_devices else ()
        for name in self.host_names:
            hosts.setdefault(name, HostConfig(name=name, network_devices=devices))
        return list(hosts.values())

    def _controller_binaries(self) -> list[str]:
        return ([services.CONDUCTOR] if self.conductor is not None else []) + (
            [services.SCHEDULER] if self.scheduler is not None else [])

    def add_host(self, host: HostConfig) -> ComputeAgent:
        """Start an agent for `host`: it registers its service, node and provider tree,
        and the host is mapped to this plane's cell (a host mapped to another cell
        does not start: its records are there)."""
        agent = ComputeAgent(host, self.settings, self.api_db, self.placement,
                             cell_db=self.cell_db_of_host(host), conductor=self.conductor_api)
        agent.on_kill = lambda: self.kill_host(host.name, agent)
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

    def kill_host(self, name: str, agent: ComputeAgent) -> None:
        """A fault killed the host's agent (agent/faults.py): it stops as `stop_host` stops
        it. In an agent process whose last host this was, `killed` is set and the process
        exits (compute/worker.py), as a dead nova-compute would be gone."""
        with self._lock:
            if self.agents.get(name) is not agent:
                return  # a newer agent of that name runs now
        self.stop_host(name)
        LOG.warning("host %s: agent stopped (killed by fault injection)", name)
        if self.roles == {COMPUTE_ROLE} and not self.agents:
            self.killed.set()

    def reconfigure(self, settings: ComputeSettings) -> None:
        """New options for the conductor, scheduler and agents started from now on."""
        self.settings = settings
        for worker in (self.conductor, self.scheduler):
            if worker is not None:
                worker.settings = settings

    def reset_provider_caches(self) -> None:
        """Every agent here reports its providers in full at its next period (SIGHUP)."""
        for agent in list(self.agents.values()):
            agent.reset_provider_cache()

    def agent(self, name: str) -> ComputeAgent:
        return self.agents[name]

    def drain(self, timeout: float = 60.0) -> bool:
        """Wait until the control plane is idle; True when it got there in `timeout` s.

        In-process, idle means no cast is running. Over a broker, this
        process's handlers must be idle and, as the conductor may run in
        other processes, the journal must hold no operation without an end
        (the API journals an operation when it accepts it, before the cast):
        what the user would see as every server settled. An operation cut
        off by a crash counts until a conductor recovers it.
        """
        deadline = time.monotonic() + timeout
        if not self.transport.drain(timeout):
            return False
        if isinstance(self.transport, LocalTransport):
            return True
        while any(tasks.interrupted(db) for db in self._journal_dbs()):
            if time.monotonic() + _JOURNAL_POLL > deadline:
                return False
            time.sleep(_JOURNAL_POLL)
        return self.transport.drain(max(deadline - time.monotonic(), 0.0))

    def _journal_dbs(self) -> list[Database]:
        """Where operations are journaled: every cell's database."""
        return [self.db] if self.cells is None else [db for _, db in self.cells.distinct()]

    def stop(self) -> None:
        """Stop consuming first, then the hosts: a host's handler still running finds its
        agent alive, and thousands of hosts are not unsubscribed one at a time."""
        self._stop.set()
        for thread in (self._timer, self._beater):
            if thread is not None:
                thread.join(timeout=10)
        self.transport.close()
        for name in list(self.agents):
            self.stop_host(name)
        for conductor in list(self.conductors.values()):
            conductor.leases.stop()  # a stopped conductor renews nothing more

    def _periodic(self) -> None:
        """Run each job when its period has passed since it last ran (or since the start).

        Periods are read from the current settings on every tick, so that
        `reconfigure` (tests, or a changed option) takes effect at once.
        """
        last: dict[tuple[str, int], float] = {}
        started = time.monotonic()
        while not self._stop.wait(0.5):
            now = time.monotonic()
            for key, period, job in self._jobs():
                if now - last.get(key, started) >= period:
                    last[key] = now
                    _guarded(job)

    def _jobs(self) -> list[tuple[tuple[str, int], float, Callable[[], None]]]:
        """Every role's periodic jobs, keyed by whose they are and their place in its list
        (each cell database's conductor runs its own)."""
        s = self.settings
        jobs: list[tuple[tuple[str, int], float, Callable[[], None]]] = []
        if COMPUTE_ROLE in self.roles:
            jobs.append((("compute", 0), s.update_resources_interval, self._update_resources))
            jobs.append((("compute", 1), s.sync_power_state_interval
                         if s.sync_power_state_interval > 0 else float("inf"),
                         self._sync_power_states))
        for key, conductor in list(self.conductors.items()):
            jobs.extend(((key, i), period, job)
                        for i, (period, job) in enumerate(_conductor_jobs(s, conductor)))
        if self.conductor is not None:
            jobs.append((("unbuilt", 0), s.conductor_lease_seconds, self._sweep_unbuilt))
        return jobs

    def _sweep_unbuilt(self) -> None:
        """Remove the API records of servers no cell got (unbuilt.py)."""
        self.unbuilt.sweep(self.settings.conductor_lease_seconds)

    def _beat(self) -> None:
        """Every `report_interval` (read each round), all of this process's heartbeats."""
        while not self._stop.wait(self.settings.report_interval):
            _guarded(self._heartbeats)

    def _heartbeats(self) -> None:
        """The controller services', then the running agents' in a few transactions.

        One UPDATE per chunk of hosts rather than one transaction per host: at
        10,000 hosts per deployment the per-host form alone is 1,000 database
        transactions a second at the default interval.
        """
        binaries = self._controller_binaries()
        if binaries:
            with self.db.write() as conn:
                for binary in binaries:
                    services.heartbeat(conn, self.controller_host, binary)
        by_db: dict[str, tuple[Database, list[str]]] = {}
        for agent in list(self.agents.values()):
            if agent.beats():  # running, and no heartbeat fault (agent/faults.py)
                by_db.setdefault(_key(agent.db), (agent.db, []))[1].append(agent.host.name)
        for db, hosts in by_db.values():
            for start in range(0, len(hosts), _HEARTBEAT_CHUNK):
                with db.write() as conn:
                    gone = services.heartbeat_many(
                        conn, hosts[start:start + _HEARTBEAT_CHUNK], services.COMPUTE)
                for host in gone:
                    LOG.warning("host %s: service record deleted; restart the agent to "
                                "register it again", host)

    def _update_resources(self) -> None:
        """Every host's tracker run, `_TRACKER_THREADS` at a time.

        A run mostly waits (a Placement request, four or five database
        transactions: about 60 ms under load); one after another, an agent
        process of 2,500 hosts took 150 s for a round of its 60 s period
        (bench/scale.py at 10,000 hosts). Each agent runs in one thread per
        round, as its RPC handlers already run beside its tracker.
        """
        agents = list(self.agents.values())
        if not agents:
            return
        with ThreadPoolExecutor(min(_TRACKER_THREADS, len(agents)),
                                thread_name_prefix="tracker") as pool:
            for agent in agents:
                pool.submit(self._track, agent)

    def _sync_power_states(self) -> None:
        """Every running host's power-state sync, one host after another (a run reads one
        list of instances and asks the driver, in memory, about each)."""
        for agent in list(self.agents.values()):
            if self._stop.is_set():
                return
            if agent.running:
                _guarded(agent.sync_power_states)

    def _track(self, agent: ComputeAgent) -> None:
        """One host's run, unless the plane is stopping: a round of thousands of hosts
        must not outlive SIGTERM (nor fail host after host once the API has gone)."""
        if not self._stop.is_set():
            _guarded(agent.update_available_resource)


def _key(db: Database) -> str:
    """Which database a handle is for (handles of one database compare equal)."""
    return db.engine.url.render_as_string(hide_password=False)


class CellRouter:
    """The `conductor` RPC target of a plane with cells: each cast goes to the conductor
    of the database of its server's cell (every method names its server)."""

    def __init__(self, plane: ControlPlane) -> None:
        self._plane = plane

    def __getattr__(self, method: str) -> Callable[..., Any]:
        if method.startswith("_"):
            raise AttributeError(method)
        plane = self._plane
        assert plane.conductor is not None and plane.cells is not None
        getattr(plane.conductor, method)  # an unknown method is an AttributeError now

        def dispatch(**kwargs: Any) -> Any:
            assert plane.cells is not None
            cell = kwargs.pop("cell_uuid", None)  # a cast naming its cell (cross_cell.py)
            if cell is not None:
                db = plane.cells.database(plane.cells.by_uuid(str(cell)))
            else:
                uuid = kwargs.get("instance_uuid") or kwargs["instance_uuids"][0]
                db = plane.cells.db_of_instance(str(uuid))
            return getattr(plane.conductor_for(db), method)(**kwargs)
        return dispatch


def _conductor_jobs(s: ComputeSettings,
                    conductor: Conductor) -> list[tuple[float, Callable[[], None]]]:
    """What every conductor process runs on its timer; each job is safe to run in several
    conductors at once (each change is a compare-and-swap on the instance's state)."""
    return [
        # Leases: take over what a dead conductor left (one winner per operation).
        (s.conductor_lease_seconds / 3, conductor.take_over_expired),
        (max(s.resize_confirm_window / 4, 1.0), conductor.confirm_expired_resizes),
        (s.shelved_poll_interval if s.shelved_poll_interval > 0 else float("inf"),
         conductor.offload_shelved),
        (s.reclaim_instance_interval if s.reclaim_instance_interval > 0 else float("inf"),
         conductor.reclaim_soft_deleted),
    ]


def _guarded(job: Callable[[], Any]) -> None:
    try:
        job()
    except Exception:
        LOG.exception("periodic task %s failed", getattr(job, "__qualname__", job))
