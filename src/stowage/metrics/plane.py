"""stowage's own gauges, read when scraped: cells up or down, the audit, RabbitMQ queues.

    stowage_cell_up {cell}                   1 when the cell's database answers a SELECT 1
    stowage_audit_violations                 violations the last audit found (0: clean)
    stowage_audit_last_run_timestamp_seconds when that audit finished (Unix time)
    stowage_rpc_queue_messages {queue}       messages waiting in the conductor's and the
                                             scheduler's queues (RabbitMQ transport only)

The audit (`stowage manage placement audit`'s checks) reads every provider
and every server: far too much for each scrape. It runs in a thread of its
own at most every `[metrics] audit_interval` seconds, started by a scrape,
and a scrape reports the last result it has.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa

from stowage.metrics.text import Family, label_text

__all__ = ["AuditRunner", "cell_families", "queue_families"]

LOG = logging.getLogger(__name__)
# The queues whose depth is reported: the control plane's shared ones.
QUEUED_TARGETS = ("conductor", "scheduler")


def cell_families(cells: Any) -> Iterator[Family]:
    """`stowage_cell_up` for each cell (`cells`: compute.cells.Cells)."""
    fam = Family("stowage_cell_up", "1 when the cell's database answers, 0 when it does not.")
    for members, db in cells.distinct():
        try:
            with db.read() as conn:
                conn.execute(sa.text("SELECT 1"))
            up = 1
        except Exception as exc:  # noqa: BLE001 - any failure is a down cell
            LOG.warning("metrics: cells %s did not answer: %s", [c.name for c in members], exc)
            up = 0
        for cell in members:
            fam.add(label_text(("cell",), (cell.name,)), up)
    yield fam


class AuditRunner:
    """The last audit's result, refreshed in the background at most every `interval` s."""

    def __init__(self, run: Any, interval: float) -> None:
        self._run = run
        self.interval = interval
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.violations: int | None = None
        self.finished_at = 0.0

    def families(self) -> Iterator[Family]:
        self._refresh()
        if self.violations is None:
            return  # the first audit is still running
        count = Family("stowage_audit_violations", "Accounting invariants the last audit "
                       "found broken (stowage manage placement audit); 0 when clean.")
        count.add("", self.violations)
        when = Family("stowage_audit_last_run_timestamp_seconds",
                      "When the last audit finished (Unix time).")
        when.add("", self.finished_at)
        yield count
        yield when

    def _refresh(self) -> None:
        with self._lock:
            due = time.time() - self.finished_at >= self.interval
            if not due or (self._thread is not None and self._thread.is_alive()):
                return
            self._thread = threading.Thread(target=self._audit, name="metrics-audit",
                                            daemon=True)
            self._thread.start()

    def _audit(self) -> None:
        try:
            found = len(self._run())
        except Exception:
            LOG.exception("metrics: the audit failed; tried again at the next scrape")
            return
        self.violations, self.finished_at = found, time.time()

    def wait(self, timeout: float) -> None:
        """For tests: wait for a running audit to finish."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)


def queue_families(transport: Any) -> Iterator[Family]:
    """The depth of the control plane's queues on the broker, by a passive declare on a
    short connection of its own (the transport's connections belong to its threads)."""
    url = getattr(transport, "_url", None)
    names = getattr(transport, "names", None)
    if url is None or names is None:
        return
    from kombu.connection import Connection

    fam = Family("stowage_rpc_queue_messages", "Messages waiting in a control-plane queue "
                 "on the RabbitMQ broker.")
    try:
        with Connection(url, connect_timeout=2) as conn:
            for target in QUEUED_TARGETS:
                channel = conn.channel()
                try:
                    _, count, _ = channel.queue_declare(names.queue(target), passive=True)
                except Exception:  # noqa: BLE001 - the queue does not exist (yet)
                    continue
                finally:
                    _close(channel)
                fam.add(label_text(("queue",), (target,)), count)
    except Exception as exc:  # noqa: BLE001 - the broker is away: no depth to report
        LOG.warning("metrics: the broker did not answer: %s", exc)
        return
    yield fam


def _close(channel: Any) -> None:
    try:
        channel.close()
    except Exception:  # noqa: BLE001, S110 - a channel the broker closed already
        LOG.debug("metrics: channel already closed")
