"""GET /os-instance_usage_audit_log[/{before}]: how far the monthly usage audit got.

Nova's computes each run a periodic "instance usage audit" task that records,
per host and audit period, how many instances it reported and whether it
finished; this API sums those task logs for the last completed period (the
last calendar month, Nova's default `instance_usage_audit_period`), or the
last one completed before `before` ("%Y-%m-%d %H:%M:%S[.%f]", else 400
"Invalid timestamp for date ..."). stowage runs no such task, so it answers
as Nova does when no task log exists: every compute service (disabled ones
included, as they may still hold instances) is a host that has not run,
none is done or running, the log is empty. The hosts are every cell's. Admin only.
"""

from __future__ import annotations

import datetime
from typing import Any

from stowage.compute import services as svc
from stowage.compute.api.common import API_PREFIX, authorize
from stowage.timeutil import utcnow
from stowage.web.errors import HTTPError
from stowage.web.http import Request, Response, json_response
from stowage.web.routing import Route

__all__ = ["ROUTES", "last_completed_month"]


def _month_start(year: int, month: int) -> datetime.datetime:
    """The first of `month`, where month 0 is the December of the year before."""
    if month < 1:
        year, month = year - 1, month + 12
    return datetime.datetime(year, month, 1)


def last_completed_month(before: datetime.datetime) -> tuple[datetime.datetime,
                                                             datetime.datetime]:
    """(begin, end) of the last calendar month that ended strictly before `before`."""
    end = _month_start(before.year, before.month)
    if end >= before:
        end = _month_start(before.year, before.month - 1)
    return _month_start(end.year, end.month - 1), end


def _parse(value: str) -> datetime.datetime:
    try:
        return datetime.datetime.strptime(
            value, "%Y-%m-%d %H:%M:%S.%f" if "." in value else "%Y-%m-%d %H:%M:%S")
    except ValueError:
        raise HTTPError(400, f"Invalid timestamp for date {value}") from None


def _audit(req: Request, before: datetime.datetime) -> dict[str, Any]:
    begin, end = last_completed_month(before)
    parts: list[list[svc.Service]] = req.app.read_cells(
        lambda conn: svc.list_services(conn, binary=svc.COMPUTE))
    hosts = sorted({s.host for part in parts for s in part})
    # No task log: nothing done, running or errored; every host not run.
    status = "ALL" if not hosts else f"0 of {len(hosts)}"
    return {"period_beginning": str(begin), "period_ending": str(end),
            "num_hosts": len(hosts), "num_hosts_done": 0, "num_hosts_running": 0,
            "num_hosts_not_run": len(hosts), "hosts_not_run": hosts,
            "total_instances": 0, "total_errors": 0,
            "overall_status": f"{status} hosts done. 0 errors.", "log": {}}


def list_audit_logs(req: Request) -> Response:
    authorize(req, "os_compute_api:os-instance-usage-audit-log:list", {})
    return json_response({"instance_usage_audit_logs": _audit(req, utcnow())})


def show_audit_log(req: Request) -> Response:
    authorize(req, "os_compute_api:os-instance-usage-audit-log:show", {})
    before = _parse(req.params["before_timestamp"])
    return json_response({"instance_usage_audit_log": _audit(req, before)})


_LOG = API_PREFIX + "/os-instance_usage_audit_log"
ROUTES = [
    Route("GET", _LOG, list_audit_logs),
    Route("GET", _LOG + "/{before_timestamp}", show_audit_log),
]
