"""What `GET /metrics` answers: Prometheus metrics of stowage's processes and of its records.

    process.py    counters and histograms the hot paths move (one call each):
                  HTTP requests, allocation candidates, scheduler claims and
                  NoValidHost, conductor operations, RabbitMQ calls
    exporter.py   openstack-exporter's Placement and Nova gauges, computed at
                  scrape time from the database (a custom collector)
    plane.py      stowage's own gauges read at scrape time: cells up/down, the
                  audit's violations, RabbitMQ queue depth
    endpoint.py   the ASGI app of `/metrics`: who may scrape, and the text
                  exposition (summing every worker's counters with
                  `serve --workers N`)
    workers.py    the per-run directory `serve --workers N` shares between its
                  workers, and the listener of `stowage conductor|scheduler|agent`

Counters live in each process (summed over workers by prometheus-client's
multiprocess mode); gauges are never kept in a process: they are computed
from the records when scraped, so any worker answers them exactly.
"""

from __future__ import annotations

__all__: list[str] = []
