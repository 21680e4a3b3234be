"""Draining a host and planning capacity: the scheduler asked, nothing claimed.

    plan.py       for each server on a host: the destination the real scheduler
                  would choose for its live or cold migration, or why none
    overlay.py    the claims a plan has made so far, laid over the next decision
    capacity.py   how many more of each flavor fit (per zone, aggregate, cell)
                  and the free room no flavor can use
    execute.py    the drain carried out through the Compute API, resumable
    progress.py   a progress bar on a terminal, plain lines otherwise

The API routes are `compute/api/drain.py`; the commands `stowage manage host
drain` (manage_hosts.py) and `stowage manage capacity` (manage_capacity.py).
docs/drain.md tells the operator's side.
"""
