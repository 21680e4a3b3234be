"""One role of the control plane as an OS process: `stowage conductor|scheduler|agent`.

The process builds a `ControlPlane` with that role only, on the transport of
the settings (RabbitMQ: the in-process transport would reach nobody), starts
it, and waits for SIGTERM or SIGINT; then it stops taking messages, lets the
handlers it is running finish (the transport's drain timeout) and exits 0.
A message it had taken but not finished goes back to its queue for another
process of the same role: that is why several may run at once.

What a role does when it runs alone:

- conductor: crash recovery once at start (`Conductor.start`), then serves
  the `conductor` queue and runs the conductor's periodic jobs;
- scheduler: serves the `scheduler` queue and heartbeats;
- agent: one compute agent per configured host in this process (a host's
  agent recovers the guests its hypervisor kept, reports, and serves
  `compute.<host>`); heartbeats and the resource tracker run on the timer.
  When the broker goes away the agents keep their guests and their timer
  (heartbeats go to the database), and their consumers reconnect. SIGHUP
  makes every host report its providers in full at its next period (as it
  clears nova-compute's provider cache). When fault injection kills the
  agent of every host of the process (docs/faults.md), it exits with status 1.
"""

from __future__ import annotations

import logging
import signal
import threading
from types import FrameType

from stowage.compute.runtime import ControlPlane

__all__ = ["run_until_signalled"]

LOG = logging.getLogger(__name__)


def run_until_signalled(plane: ControlPlane, name: str) -> int:
    """Start `plane`, serve until SIGTERM/SIGINT, stop it; the process's exit status."""
    stopping = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        LOG.info("%s: %s received, stopping", name, signal.Signals(signum).name)
        stopping.set()
        plane.request_stop()  # during start(): add no more hosts

    def on_hangup(_signum: int, _frame: FrameType | None) -> None:
        LOG.info("%s: SIGHUP received, reporting every host's providers in full", name)
        plane.reset_provider_caches()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    signal.signal(signal.SIGHUP, on_hangup)
    try:
        plane.start()
        LOG.info("%s: started (roles %s, hosts %s)", name, ", ".join(sorted(plane.roles)),
                 ", ".join(sorted(plane.agents)) or "none")
        # A timed wait, so that the signal handler runs promptly on the main thread.
        while not stopping.wait(1.0):
            if plane.killed.is_set():
                LOG.warning("%s: every host's agent was killed by fault injection; "
                            "exiting", name)
                break
    finally:
        plane.stop()
        plane.db.dispose()
    LOG.info("%s: stopped", name)
    return 1 if plane.killed.is_set() else 0
